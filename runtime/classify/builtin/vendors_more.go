package builtin

// More vendor token formats (issue 42, round 5): services whose documentation gives their
// credentials an identifying prefix, written down from the vendors' own descriptions of the
// format (prefix, alphabet, length), not from any scanner's rules or corpus. They join the
// same table and index as vendors.go and vendors_tail.go; README.md lists every row with the
// vendor page it comes from. Where a page gives no length, the row gives a range around the
// tokens it shows.

// moreVendorRules are the formats of round 5, by family. Their bodies are written as
// literals, not with the helpers of vendors.go, so that the table is static data: it costs
// no allocation at init.
var moreVendorRules = []vendorRule{
	// AI APIs, inference platforms and LLM observability.
	{kind: "voyage-key", prefix: "pa-", segs: []seg{{"", cB64URL, 40, 50}}, det: detGenericSecret},
	{kind: "mem0-key", prefix: "m0-", segs: []seg{{"", cB62, 32, 48}}, det: detGenericSecret},
	{kind: "runpod-key", prefix: "rpa_", segs: []seg{{"", cB62, 32, 64}}, det: detGenericSecret},
	{kind: "friendli-token", prefix: "flp_", segs: []seg{{"", cB62, 30, 64}}, det: detGenericSecret},
	{kind: "openpipe-key", prefix: "opk_", segs: []seg{{"", cB62, 32, 64}}, det: detGenericSecret},
	{kind: "daytona-key", prefix: "dtn_", segs: []seg{{"", cB62, 32, 80}}, det: detGenericSecret},
	{kind: "kaggle-token", prefix: "KGAT_", segs: hex32, det: detGenericSecret},
	{kind: "chroma-key", prefix: "ck-", segs: []seg{{"", cB62, 32, 64}}, det: detGenericSecret},
	{kind: "cartesia-key", prefix: "sk_car_", segs: []seg{{"", cB62, 20, 64}}, det: detGenericSecret},
	{kind: "logfire-token", prefix: "pylf_v1_", segs: []seg{{"", cB64URL, 30, 80}}, det: detGenericSecret},
	{kind: "vercel-token", prefix: "vcp_", segs: []seg{{"", cB62, 24, 64}}, det: detGenericSecret},
	{kind: "vercel-token", prefix: "vci_", segs: []seg{{"", cB62, 24, 64}}, det: detGenericSecret},
	{kind: "vercel-token", prefix: "vca_", segs: []seg{{"", cB62, 24, 64}}, det: detGenericSecret},
	{kind: "vercel-token", prefix: "vcr_", segs: []seg{{"", cB62, 24, 64}}, det: detGenericSecret},
	{kind: "vercel-token", prefix: "vck_", segs: []seg{{"", cB62, 24, 64}}, det: detGenericSecret},

	// Developer platforms, CI/CD, docs and code security.
	{kind: "gitlab-runner-registration-legacy", prefix: "GR1348941", segs: []seg{{"", cB64URL, 20, 20}}, det: detGitLab},
	{kind: "teamcity-token", prefix: "eyJ0eXAiOiAiVENWMiJ9.", segs: []seg{{"", cB64URL, 20, 100}, {".", cB64URL, 20, 100}}, det: detGenericSecret},
	{kind: "cockroachdb-cloud-key", prefix: "CCDB1_", segs: []seg{{"", cB62, 16, 32}, {"_", cB62, 32, 64}}, det: detGenericSecret},
	{kind: "appwrite-key", prefix: "standard_", segs: []seg{{"", cHex, 64, 512}}, det: detGenericSecret},
	{kind: "dbt-cloud-token", prefix: "dbtc_", segs: []seg{{"", cB64URL, 30, 80}}, det: detGenericSecret},
	{kind: "dbt-cloud-token", prefix: "dbtu_", segs: []seg{{"", cB64URL, 30, 80}}, det: detGenericSecret},
	{kind: "codesandbox-token", prefix: "csb_v1_", segs: []seg{{"", cB64URL, 30, 64}}, det: detGenericSecret},
	{kind: "socket-token", prefix: "sktsec_", segs: []seg{{"", cB64URL, 30, 80}}, det: detGenericSecret},
	{kind: "stackhawk-key", prefix: "hawk.", segs: []seg{{"", cB62, 20, 20}, {".", cB62, 20, 20}}, det: detGenericSecret},
	{kind: "gitbook-token", prefix: "gb_api_", segs: []seg{{"", cB62, 30, 64}}, det: detGenericSecret},
	{kind: "mintlify-key", prefix: "mint_", segs: []seg{{"", cB62, 24, 64}}, det: detGenericSecret},
	{kind: "mintlify-key", prefix: "mint_dsc_", segs: []seg{{"", cB62, 24, 64}}, det: detGenericSecret},
	{kind: "builderio-private-key", prefix: "bpk-", segs: hex32, det: detGenericSecret},
	{kind: "plane-token", prefix: "plane_api_", segs: hex32, det: detGenericSecret},
	{kind: "postman-collection-key", prefix: "PMAT-", segs: []seg{{"", cUpNum, 26, 26}}, det: detGenericSecret},
	{kind: "metabase-key", prefix: "mb_", segs: []seg{{"", cB64, 40, 48}}, pad: true, det: detGenericSecret},
	{kind: "chromatic-project-token", prefix: "chpt_", segs: []seg{{"", cB62, 12, 20}}, det: detGenericSecret},
	{kind: "statsig-console-key", prefix: "console-", segs: []seg{{"", cB62, 30, 64}}, det: detGenericSecret},

	// API gateways, authorization and identity.
	{kind: "unkey-root-key", prefix: "unkey_", segs: []seg{{"", cB62, 16, 48}}, det: detGenericSecret},
	{kind: "zuplo-key", prefix: "zpka_", segs: []seg{{"", cB64URL, 32, 80}}, det: detGenericSecret},
	{kind: "permit-key", prefix: "permit_key_", segs: []seg{{"", cB62, 30, 80}}, det: detGenericSecret},
	{kind: "ory-session-token", prefix: "ory_st_", segs: []seg{{"", cB62, 32, 64}}, det: detGenericSecret},
	{kind: "ory-oauth2-token", prefix: "ory_at_", segs: []seg{{"", cB64URL, 30, 64}, {".", cB64URL, 30, 64}}, det: detGenericSecret},
	{kind: "ory-oauth2-token", prefix: "ory_rt_", segs: []seg{{"", cB64URL, 30, 64}, {".", cB64URL, 30, 64}}, det: detGenericSecret},
	{kind: "ory-oauth2-token", prefix: "ory_ac_", segs: []seg{{"", cB64URL, 30, 64}, {".", cB64URL, 30, 64}}, det: detGenericSecret},
	{kind: "netbird-pat", prefix: "nbp_", segs: []seg{{"", cB62, 36, 36}}, det: detGenericSecret},

	// Cloud, databases and infrastructure.
	{kind: "exoscale-key", prefix: "EXO", segs: []seg{{"", cHex, 24, 24}}, det: detGenericSecret},
	{kind: "backblaze-b2-key", prefix: "K00", segs: []seg{{"", cDigit, 1, 1}, {"", cB64, 27, 27}}, det: detGenericSecret},
	{kind: "k3s-token", prefix: "K10", segs: []seg{{"", cHex, 64, 64}, {"::", cLowNum, 3, 32}, {":", cB62, 16, 128}}, det: detGenericSecret},
	{kind: "upcloud-token", prefix: "ucat_", segs: []seg{{"", cB62, 24, 40}}, det: detGenericSecret},
	{kind: "elastic-cloud-key", prefix: "essu_", segs: []seg{{"", cB64, 40, 200}}, pad: true, det: detGenericSecret},
	{kind: "imagekit-private-key", prefix: "private_", segs: []seg{{"", cB64, 20, 40}}, pad: true, det: detGenericSecret},
	{kind: "qstash-signing-key", prefix: "sig_", segs: []seg{{"", cB62, 20, 40}}, det: detGenericSecret},
	{kind: "mongodb-atlas-service-account", prefix: "mdb_sa_id_", segs: []seg{{"", cHex, 24, 24}}, det: detGenericSecret},
	{kind: "mongodb-atlas-service-account", prefix: "mdb_sa_sk_", segs: []seg{{"", cB62, 32, 64}}, det: detGenericSecret},
	{kind: "turbopuffer-key", prefix: "tpuf_", segs: []seg{{"", cB62, 32, 64}}, det: detGenericSecret},

	// Payments, CRM and scheduling.
	{kind: "mollie-access-token", prefix: "access_", segs: []seg{{"", cB62, 30, 50}}, det: detGenericSecret},
	{kind: "wompi-private-key", prefix: "prv_prod_", segs: []seg{{"", cB62, 24, 40}}, det: detGenericSecret},
	{kind: "wompi-private-key", prefix: "prv_test_", segs: []seg{{"", cB62, 24, 40}}, det: detGenericSecret},
	{kind: "close-api-key", prefix: "api_", segs: []seg{{"", cB62, 20, 24}, {".", cB62, 20, 24}}, det: detGenericSecret},
	{kind: "savvycal-token", prefix: "pt_secret_", segs: []seg{{"", cB64URL, 30, 80}}, det: detGenericSecret},
	{kind: "tatum-key", prefix: "t-", segs: []seg{{"", cHex, 24, 24}, {"-", cHex, 32, 32}}, det: detGenericSecret},

	// Data APIs, games, messaging and notifications.
	{kind: "brave-search-key", prefix: "BSA", segs: []seg{{"", cB62, 25, 32}}, det: detGenericSecret},
	{kind: "riot-games-key", prefix: "RGAPI-", segs: uuidSegs, det: detGenericSecret},
	{kind: "matrix-access-token", prefix: "syt_", segs: []seg{{"", cB64, 2, 100}, {"_", cB62, 20, 20}, {"_", cB62, 6, 6}}, det: detGenericSecret},
	{kind: "matrix-access-token", prefix: "syr_", segs: []seg{{"", cB64, 2, 100}, {"_", cB62, 20, 20}, {"_", cB62, 6, 6}}, det: detGenericSecret},
	{kind: "lichess-token", prefix: "lip_", segs: []seg{{"", cB62, 16, 24}}, det: detGenericSecret},
	{kind: "ntfy-token", prefix: "tk_", segs: []seg{{"", cB62, 29, 29}}, det: detGenericSecret},
	{kind: "pushbullet-token", prefix: "o.", segs: []seg{{"", cB62, 32, 32}}, det: detGenericSecret},

	// Private keys written as the base64 of their DER encoding, without PEM armour (an
	// environment variable or a JSON field holding the key on one line): each DER structure
	// begins with fixed bytes, so its base64 begins with fixed characters. RSA in PKCS #8
	// (RFC 5208, the rsaEncryption algorithm) and PKCS #1 (RFC 8017), EC in PKCS #8 (RFC 5915,
	// id-ecPublicKey) and SEC1 (RFC 5915: P-256, secp256k1, P-384, P-521), Ed25519 and X25519
	// in PKCS #8 (RFC 8410). The three characters after "MII" are the structure's length.
	// Public keys (SubjectPublicKeyInfo: "MIIBIjAN…", "MFkwEw…", "MCowBQ…") begin otherwise.
	{kind: "der-private-key", prefix: "MII", segs: []seg{{"", cB64, 3, 3}, {"IBADANBgkqhkiG9w0BAQEFAASC", cB64, 500, 6000}}, pad: true, det: detPrivateKey},
	{kind: "der-private-key", prefix: "MII", segs: []seg{{"", cB64, 3, 3}, {"IBAAK", cB64, 500, 6000}}, pad: true, det: detPrivateKey},
	{kind: "der-private-key", prefix: "MI", segs: []seg{{"", cB64, 2, 2}, {"AgEAMB", cB64, 1, 1}, {"GByqGSM49AgEG", cB64, 100, 400}}, pad: true, det: detPrivateKey},
	{kind: "der-private-key", prefix: "MHcCAQEE", segs: []seg{{"", cB64, 120, 200}}, pad: true, det: detPrivateKey},
	{kind: "der-private-key", prefix: "MHQCAQEE", segs: []seg{{"", cB64, 120, 200}}, pad: true, det: detPrivateKey},
	{kind: "der-private-key", prefix: "MIGkAgEBBD", segs: []seg{{"", cB64, 150, 260}}, pad: true, det: detPrivateKey},
	{kind: "der-private-key", prefix: "MIHcAgEBBE", segs: []seg{{"", cB64, 250, 350}}, pad: true, det: detPrivateKey},
	{kind: "der-private-key", prefix: "MC4CAQAwBQYDK2VwBCIEI", segs: []seg{{"", cB64, 43, 43}}, det: detPrivateKey},
	{kind: "der-private-key", prefix: "MC4CAQAwBQYDK2VuBCIEI", segs: []seg{{"", cB64, 43, 43}}, det: detPrivateKey},

	// Monitoring and browser testing.
	{kind: "lambdatest-key", prefix: "LT_", segs: []seg{{"", cB62, 40, 60}}, det: detGenericSecret},
	{kind: "checkly-key", prefix: "cu_", segs: hex32, det: detGenericSecret},
}
