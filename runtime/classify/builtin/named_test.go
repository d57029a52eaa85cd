package builtin

import (
	"encoding/base64"
	"encoding/binary"
	"testing"
)

// sshPublicKey returns the base64 blob of an SSH public key of type kind, as authorized_keys
// writes it: the key type and a key of n bytes, each after its 4-byte length.
func sshPublicKey(kind string, n, seed int) string {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(len(kind)))
	b = append(b, kind...)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, fakeFrom(alphaB62, n, seed)...)
	return base64.StdEncoding.EncodeToString(b)
}

// Credentials named in words (named.go): what a user pastes into a prompt, what a log line
// says, and what code hands an SDK, with no operator between the name and the value; and
// the texts where the words name something about a credential, a key pair or an example.
func TestCredentialsNamedInWords(t *testing.T) {
	c := allDetectors(t)
	tok := fakeFrom(alphaB62, 32, 301)
	hex := fakeHex(40, 302)
	uuid := fakeUUID(303)
	b64 := fakeFrom(alphaB62+"+/", 86, 304) + "=="
	generic := func(v string) func(string) []span { return one("generic-secret", v) }
	openaiKey := "s" + "k-proj-" + fakeFrom(alphaB62, 40, 309)
	ghToken := withChecksum("gh" + "p_" + fakeFrom(alphaB62, 36, 310))
	runSpanCases(t, c, []spanCase{
		{"a key pasted into a prompt", "hey, my mailjet api key is " + tok + " can you check why it fails?", generic(tok)},
		{"a key after a colon at the end of a sentence", "Here is the key you asked for: " + tok + ".", generic(tok)},
		{"a secret right after its word", "Airbrake secret " + tok, generic(tok)},
		{"a password in a sentence", "the password for the staging db is " + tok + ", please rotate it", generic(tok)},
		{"a token in quotes", "use the token '" + tok + "' for the webhook", generic(tok)},
		{"a credential in a log line", "2024-05-02T10:11:12Z INFO connecting to billing with credential " + hex, generic(hex)},
		{"a UUID named a secret", "the webhook secret " + uuid + " was leaked", generic(uuid)},
		{"a padded base64 key", "storage account key " + b64, generic(b64)},
		{"an identifier naming a credential", "export done, ACME_API_TOKEN " + tok, generic(tok)},
		{"the first argument of a client's constructor", `client := acme.NewClient("` + tok + `")`, generic(tok)},
		{"the first argument of createClient", `const c = createClient('` + tok + `');`, generic(tok)},
		{"an AWS secret key named in words", "aws secret key " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + fakeFrom(alphaB62, 10, 305),
			one("aws-secret-key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"+fakeFrom(alphaB62, 10, 305))},

		{"a password with symbols", "the password is " + tok[:12] + "#!" + tok[12:20], generic(tok[:12] + "#!" + tok[12:20])},
		{"a key with a symbol of no token's alphabet is no key", "the key is " + tok[:12] + "#" + tok[12:], none},
		{"an SSH public key named a deploy key", "deploy key ssh-ed25519 " + sshPublicKey("ssh-ed25519", 32, 306) + " ci@example", none},
		{"an SSH public key assigned to a key", "DEPLOY_KEY=" + sshPublicKey("ssh-rsa", 64, 307), none},
		{"an ECDSA public key after key", "the key " + sshPublicKey("ecdsa-sha2-nistp256", 65, 308), none},
		{"a vendor's token after words that refuse a named value is still redacted (an attacker can write them)", "an example key " + openaiKey, one("openai-key", openaiKey)},
		{"a GitHub token after the words of an example is still redacted", "tokens look like " + ghToken, one("github-token", ghToken)},
		{"a UUID after key alone is an id", "the key " + uuid + " was not found", none},
		{"a key id", "created api key id " + hex, none},
		{"a key's fingerprint", "token fingerprint " + hex + " matches", none},
		{"a GPG key", "gpg: using RSA key " + "ABAF11C65A2970B130ABE3C479BE3E4300411886", none},
		{"an SSH host key", "host key " + tok + " accepted", none},
		{"a public key", "the public key " + b64 + " goes in authorized_keys", none},
		{"a page token", "next page token " + tok, none},
		{"an example of a format", "tokens look like " + tok + " in the docs", none},
		{"a sample key", "an example key " + tok, none},
		{"a word after the key's clause", "I lost my key. Build " + hex + " is green", none},
		{"a credential's word too far before", "the key was rotated and the new deployment of the service uses build " + hex, none},
		{"a call is code, not a value", "config: key " + tok + "(x)", none},
		{"words after a key", "the key you asked for is in the team vault, ask the platform team", none},
		{"a commit after a key's word, through a path", "key rotation landed in commit " + hex, none},
		{"a client call's argument that is a URL", `client := acme.NewClient("https://api.acme.example/v1")`, none},
		{"a call that is not a client's", `log.Print("` + tok + `")`, none},
		{"a client call's second argument", `acme.NewClient(ctx, "` + tok + `")`, none},
	})
}
