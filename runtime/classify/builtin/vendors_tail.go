package builtin

// The long tail of vendor token formats (issue 42): services whose documentation gives
// their credentials a fixed prefix or marker, added to the same table and index as the
// rules of vendors.go. README.md lists every row with the vendor page it comes from.

var (
	b64n   = func(min, max int) []seg { return []seg{{"", cB64, min, max}} }
	lownum = func(min, max int) []seg { return []seg{{"", cLowNum, min, max}} }
	hexn   = func(n int) []seg { return []seg{{"", cHex, n, n}} }
)

// tailVendorRules are the long-tail formats, by family.
var tailVendorRules = []vendorRule{
	// AI APIs, LLM gateways and LLM observability.
	{kind: "langfuse-secret-key", prefix: "sk-lf-", segs: uuidSegs, det: detGenericSecret},
	{kind: "helicone-key", prefix: "sk-helicone-", segs: []seg{{"", cLowNum, 7, 7}, {"-", cLowNum, 7, 7}, {"-", cLowNum, 7, 7}, {"-", cLowNum, 7, 7}}, det: detGenericSecret},
	{kind: "tavily-key", prefix: "tvly-", segs: b64urn(32, 48), det: detGenericSecret},
	{kind: "firecrawl-key", prefix: "fc-", segs: hex32, det: detGenericSecret},
	{kind: "jina-key", prefix: "jina_", segs: b62n(40, 80), det: detGenericSecret},
	{kind: "together-key", prefix: "tgp_v1_", segs: b64urn(40, 64), det: detGenericSecret},
	{kind: "fireworks-key", prefix: "fw_", segs: b62n(20, 40), det: detGenericSecret},
	{kind: "cerebras-key", prefix: "csk-", segs: lownum(40, 60), det: detGenericSecret},
	{kind: "anyscale-key", prefix: "esecret_", segs: b62n(20, 40), det: detGenericSecret},
	{kind: "llamacloud-key", prefix: "llx-", segs: b62n(40, 60), det: detGenericSecret},
	{kind: "modal-token", prefix: "ak-", segs: b62n(22, 22), det: detGenericSecret},
	{kind: "modal-token", prefix: "as-", segs: b62n(22, 22), det: detGenericSecret},
	{kind: "runway-key", prefix: "key_", segs: hexn(128), det: detGenericSecret},
	{kind: "langsmith-legacy-key", prefix: "ls__", segs: hex32, det: detGenericSecret},
	{kind: "promptlayer-key", prefix: "pl_", segs: hex32, det: detGenericSecret},
	{kind: "humanloop-key", prefix: "hl_sk_", segs: b62n(40, 64), det: detGenericSecret},
	{kind: "nvidia-api-key", prefix: "nvapi-", segs: b64urn(64, 64), det: detGenericSecret},
	{kind: "e2b-key", prefix: "e2b_", segs: hex40, det: detGenericSecret},
	{kind: "bedrock-api-key", prefix: "ABSK", segs: b64n(60, 400), pad: true, det: detGenericSecret},

	// Developer platforms, hosting and CI.
	{kind: "vercel-blob-token", prefix: "vercel_blob_rw_", segs: b64urn(40, 80), det: detGenericSecret},
	{kind: "wix-api-key", prefix: "IST.eyJ", segs: []seg{{"", cGitLab, 100, 1500}}, det: detGenericSecret},
	{kind: "aws-session-token", prefix: "IQoJb3JpZ2luX2Vj", segs: b64n(100, 1500), pad: true, det: detGenericSecret},
	{kind: "aws-session-token", prefix: "FwoGZXIvYXdzE", segs: b64n(100, 1500), pad: true, det: detGenericSecret},
	{kind: "deno-deploy-token", prefix: "ddp_", segs: b62n(36, 36), det: detGenericSecret},
	{kind: "deno-deploy-token", prefix: "ddw_", segs: b62n(36, 36), det: detGenericSecret},
	{kind: "dropbox-token", prefix: "sl.", segs: b64urn(130, 1400), det: detGenericSecret},
	{kind: "dropbox-token", prefix: "sl.u.", segs: b64urn(130, 1400), det: detGenericSecret},
	{kind: "akamai-client-token", prefix: "akab-", segs: []seg{{"", cLowNum, 16, 16}, {"-", cLowNum, 16, 16}}, det: detGenericSecret},
	{kind: "sourcegraph-cody-token", prefix: "slk_", segs: hex64, det: detGenericSecret},
	{kind: "portainer-token", prefix: "ptr_", segs: b64n(40, 48), pad: true, det: detGenericSecret},
	{kind: "scaleway-access-key", prefix: "SCW", segs: []seg{{"", cUpNum, 17, 17}}, det: detGenericSecret},
	{kind: "digitalocean-spaces-key", prefix: "DO00", segs: []seg{{"", cUpNum, 16, 16}}, det: detGenericSecret},
	{kind: "prefect-bot-key", prefix: "pnb_", segs: b62n(36, 36), det: detGenericSecret},
	{kind: "linear-oauth-token", prefix: "lin_oauth_", segs: hex64, det: detGenericSecret},

	// Identity, feature flags and analytics.
	{kind: "ory-token", prefix: "ory_pat_", segs: b62n(32, 64), det: detGenericSecret},
	{kind: "adobe-client-secret", prefix: "p8e-", segs: b64urn(32, 32), det: detGenericSecret},
	{kind: "nylas-key", prefix: "nyk_v0_", segs: b62n(40, 64), det: detGenericSecret},
	{kind: "stytch-statsig-secret", prefix: "secret-", segs: b64urn(30, 80), det: detGenericSecret},
	{kind: "persona-key", prefix: "persona_production_", segs: b64urn(30, 64), det: detGenericSecret},
	{kind: "persona-key", prefix: "persona_sandbox_", segs: b64urn(30, 64), det: detGenericSecret},
	{kind: "onfido-token", prefix: "api_live.", segs: []seg{{"", cGitLab, 30, 80}}, det: detGenericSecret},
	{kind: "onfido-token", prefix: "api_sandbox.", segs: []seg{{"", cGitLab, 30, 80}}, det: detGenericSecret},
	{kind: "flagsmith-server-key", prefix: "ser.", segs: b62n(20, 40), det: detGenericSecret},
	{kind: "posthog-personal-key", prefix: "phx_", segs: b64urn(40, 50), det: detGenericSecret},

	// Monitoring, logging and browser testing.
	{kind: "honeybadger-token", prefix: "hbp_", segs: b62n(30, 30), det: detGenericSecret},
	{kind: "firehydrant-token", prefix: "fhb-", segs: hex32, det: detGenericSecret},
	{kind: "rootly-key", prefix: "rootly_", segs: hex64, det: detGenericSecret},
	{kind: "browserbase-key", prefix: "bb_live_", segs: b64urn(24, 48), det: detGenericSecret},
	{kind: "axiom-token", prefix: "xaat-", segs: uuidSegs, det: detGenericSecret},
	{kind: "axiom-token", prefix: "xapt-", segs: uuidSegs, det: detGenericSecret},
	{kind: "coralogix-key", prefix: "cxtp_", segs: b62n(24, 40), det: detGenericSecret},
	{kind: "coralogix-key", prefix: "cxup_", segs: b62n(24, 40), det: detGenericSecret},
	{kind: "nightfall-key", prefix: "NF-", segs: b62n(32, 32), det: detGenericSecret},
	{kind: "ubidots-token", prefix: "BBFF-", segs: b62n(30, 30), det: detGenericSecret},
	{kind: "fullstory-key", prefix: "na1.", segs: b64n(60, 200), pad: true, det: detGenericSecret},
	{kind: "voiceflow-key", prefix: "VF.", segs: []seg{{"", cUpNum, 2, 2}, {".", cHexAny, 24, 24}, {".", cB62, 16, 16}}, det: detGenericSecret},
	{kind: "voiceflow-key", prefix: "VF.", segs: []seg{{"", cHexAny, 24, 24}, {".", cB62, 16, 16}}, det: detGenericSecret},

	// Payments, e-commerce and shipping.
	{kind: "midtrans-server-key", prefix: "SB-Mid-server-", segs: b64urn(24, 24), det: detGenericSecret},
	{kind: "midtrans-server-key", prefix: "Mid-server-", segs: b64urn(24, 24), det: detGenericSecret},
	{kind: "xendit-key", prefix: "xnd_development_", segs: b64urn(40, 80), det: detGenericSecret},
	{kind: "xendit-key", prefix: "xnd_production_", segs: b64urn(40, 80), det: detGenericSecret},
	{kind: "omise-secret-key", prefix: "skey_live_", segs: lownum(19, 19), det: detGenericSecret},
	{kind: "omise-secret-key", prefix: "skey_test_", segs: lownum(19, 19), det: detGenericSecret},
	{kind: "circle-api-key", prefix: "LIVE_API_KEY:", segs: []seg{{"", cHex, 32, 32}, {":", cHex, 32, 32}}, det: detGenericSecret},
	{kind: "circle-api-key", prefix: "TEST_API_KEY:", segs: []seg{{"", cHex, 32, 32}, {":", cHex, 32, 32}}, det: detGenericSecret},
	{kind: "easyship-token", prefix: "prod_", segs: b64urn(40, 64), det: detGenericSecret},
	{kind: "easyship-token", prefix: "sand_", segs: b64urn(40, 64), det: detGenericSecret},
	{kind: "polar-token", prefix: "polar_pat_", segs: b64urn(40, 64), det: detGenericSecret},
	{kind: "polar-token", prefix: "polar_oat_", segs: b64urn(40, 64), det: detGenericSecret},
	{kind: "ecwid-secret-token", prefix: "secret_", segs: b62n(32, 32), det: detGenericSecret},
	{kind: "calcom-key", prefix: "cal_live_", segs: hex32, det: detGenericSecret},
	{kind: "paddle-key", prefix: "pdl_live_apikey_", segs: b64urn(40, 80), det: detGenericSecret},
	{kind: "paddle-key", prefix: "pdl_sdbx_apikey_", segs: b64urn(40, 80), det: detGenericSecret},
	{kind: "checkout-sandbox-key", prefix: "sk_sbox_", segs: lownum(26, 30), det: detGenericSecret},
	{kind: "gocardless-token", prefix: "sandbox_", segs: b64urn(40, 40), det: detGenericSecret},
	{kind: "live-test-key", prefix: "live_", segs: b64urn(24, 64), det: detGenericSecret},
	{kind: "live-test-key", prefix: "test_", segs: b64urn(24, 64), det: detGenericSecret},
	{kind: "razorpay-key", prefix: "rzp_live_", segs: b62n(14, 14), det: detGenericSecret},
	{kind: "razorpay-key", prefix: "rzp_test_", segs: b62n(14, 14), det: detGenericSecret},
	{kind: "duffel-token", prefix: "duffel_live_", segs: b64urn(43, 43), det: detGenericSecret},
	{kind: "duffel-token", prefix: "duffel_test_", segs: b64urn(43, 43), det: detGenericSecret},
	{kind: "braintree-access-token", prefix: "access_token$production$", segs: []seg{{"", cB62, 16, 16}, {"$", cHex, 32, 32}}, det: detGenericSecret},
	{kind: "braintree-access-token", prefix: "access_token$sandbox$", segs: []seg{{"", cB62, 16, 16}, {"$", cHex, 32, 32}}, det: detGenericSecret},
	{kind: "mercadopago-token", prefix: "APP_USR-", segs: []seg{{"", cDigit, 10, 20}, {"-", cDigit, 6, 6}, {"-", cHex, 32, 32}, {"-", cDigit, 6, 12}}, det: detGenericSecret},
	{kind: "amazon-lwa-client-secret", prefix: "amzn1.oa2-cs.v1.", segs: hex64, det: detGenericSecret},
	{kind: "amazon-lwa-refresh-token", prefix: "Atzr|", segs: b64urn(80, 800), det: detGenericSecret},
	{kind: "shipengine-sandbox-key", prefix: "TEST_", segs: b64urn(43, 43), det: detGenericSecret},
	{kind: "aftership-key", prefix: "asat_", segs: b62n(32, 40), det: detGenericSecret},
	{kind: "frameio-token", prefix: "fio-u-", segs: b64urn(64, 64), det: detGenericSecret},
	{kind: "klaviyo-private-key", prefix: "pk_", segs: hexn(34), det: detGenericSecret},
	{kind: "sk-hex-key", prefix: "sk_", segs: hex32, det: detGenericSecret},
	{kind: "ramp-client", prefix: "ramp_id_", segs: b62n(40, 40), det: detGenericSecret},
	{kind: "ramp-client", prefix: "ramp_sec_", segs: b62n(48, 48), det: detGenericSecret},
	{kind: "fleetbase-key", prefix: "flb_live_", segs: b62n(20, 20), det: detGenericSecret},
	{kind: "fleetbase-key", prefix: "flb_test_", segs: b62n(20, 20), det: detGenericSecret},

	// Data, scraping, maps and IoT APIs.
	{kind: "radar-secret-key", prefix: "prj_live_sk_", segs: hex40, det: detGenericSecret},
	{kind: "radar-secret-key", prefix: "prj_test_sk_", segs: hex40, det: detGenericSecret},
	{kind: "coingecko-key", prefix: "CG-", segs: b62n(24, 24), det: detGenericSecret},
	{kind: "covalent-key", prefix: "cqt_", segs: b62n(26, 32), det: detGenericSecret},
	{kind: "apify-token", prefix: "apify_api_", segs: b62n(36, 36), det: detGenericSecret},
	{kind: "scrapfly-key", prefix: "scp-live-", segs: hex32, det: detGenericSecret},
	{kind: "scrapfly-key", prefix: "scp-test-", segs: hex32, det: detGenericSecret},
	{kind: "adafruit-io-key", prefix: "aio_", segs: b62n(28, 28), det: detGenericSecret},
	{kind: "locationiq-token", prefix: "pk.", segs: hex32, det: detGenericSecret},
	{kind: "dfuse-key", prefix: "web_", segs: hex32, det: detGenericSecret},

	// Social and messaging.
	{kind: "africastalking-key", prefix: "atsk_", segs: hex64, det: detGenericSecret},
	{kind: "pinterest-token", prefix: "pina_", segs: b64urn(40, 200), det: detGenericSecret},
	{kind: "instagram-token", prefix: "IGQV", segs: b64urn(100, 400), det: detGenericSecret},
	{kind: "pubnub-secret-key", prefix: "sec-c-", segs: b64n(40, 64), pad: true, det: detGenericSecret},
	{kind: "mandrill-key", prefix: "md-", segs: b64urn(22, 22), det: detGenericSecret},
	{kind: "onesignal-key", prefix: "os_v2_app_", segs: lownum(50, 120), det: detGenericSecret},
	{kind: "onesignal-key", prefix: "os_v2_org_", segs: lownum(50, 120), det: detGenericSecret},
}
