package builtin

// Vendor token formats of issue 42, round 6: prefixes without a separator that begin with a
// small letter, written from the vendors' documented formats. A prefix of small letters and
// digits is keyed by its first two bytes and found from the first digit after its letters
// (lowPrefixAt); one with a capital inside by that capital (headKey). Azure's identifiable
// keys, found at the signature inside them, are azureKeys in vendor_shapes.go.
var round6VendorRules = []vendorRule{
	// NuGet.org API keys: "oy2" and 43 small letters and digits, 46 characters in all (NuGet
	// docs: Scoped API keys; the keys nuget.org issues).
	{kind: "nuget-api-key", prefix: "oy2", segs: []seg{{"", cLowNum, 43, 43}}, det: detGenericSecret},
	// crates.io API tokens: "cio" and 32 letters and digits (crates.io docs: API tokens; the
	// token crates.io shows once, `cargo login <token>`).
	{kind: "cratesio-token", prefix: "cio", segs: []seg{{"", cB62, 32, 32}}, det: detGenericSecret},
	// JFrog reference tokens: the base64 of "reftkn:" and the rest, "cmVmdGtu" and 56 more,
	// 64 characters in all (JFrog docs: Access tokens › reference tokens, the short form of an
	// access token).
	{kind: "jfrog-reference-token", prefix: "cmVmdGtu", segs: []seg{{"", cB64, 56, 56}}, det: detGenericSecret},
}

// databricksRules are Databricks personal access tokens: "dapi", 32 hex digits and, on some
// clouds, '-' and a digit (Databricks docs: Authentication › personal access tokens). They are
// indexed with vendorRules (lowPrefixAt finds them) but listed apart: README.md lists them
// with the shapes, and the two rules share a prefix, so a token of the second is a token of
// the first cut short.
var databricksRules = []vendorRule{
	{kind: "databricks-token", prefix: "dapi", segs: []seg{{"", cHex, 32, 32}, {"-", cDigit, 1, 2}}, det: detGenericSecret},
	{kind: "databricks-token", prefix: "dapi", segs: []seg{{"", cHex, 32, 32}}, det: detGenericSecret},
}
