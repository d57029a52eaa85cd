package builtin

import "strings"

// Credentials in URLs: incoming-webhook URLs, whose path is the secret (anyone who has the
// URL can post to the channel), and the password of scheme://user:password@host.

// webhook is a service whose incoming-webhook URLs are secrets.
type webhook struct {
	host string // the host, or with a leading '.' a suffix of it
	path string // the path the URL's own part begins with
	det  detector
	// inHost: the secret is the host's first label (Pipedream's endpoints).
	inHost bool
	// short accepts a secret part of fewer than 20 characters (an id and a short key).
	short bool
}

// webhooks are the services' documented webhook URL forms.
var webhooks = []webhook{
	{host: "hooks.slack.com", path: "/services/", det: detSlack},
	{host: "hooks.slack.com", path: "/workflows/", det: detSlack},
	{host: "hooks.slack.com", path: "/triggers/", det: detSlack},
	{host: "discord.com", path: "/api/webhooks/", det: detGenericSecret},
	{host: "discordapp.com", path: "/api/webhooks/", det: detGenericSecret},
	{host: "ptb.discord.com", path: "/api/webhooks/", det: detGenericSecret},
	{host: "canary.discord.com", path: "/api/webhooks/", det: detGenericSecret},
	{host: ".webhook.office.com", path: "/webhookb2/", det: detGenericSecret},
	{host: "outlook.office.com", path: "/webhook/", det: detGenericSecret},
	{host: ".logic.azure.com", path: "/workflows/", det: detGenericSecret},
	{host: ".environment.api.powerplatform.com", path: "/powerautomate/", det: detGenericSecret},
	{host: "chat.googleapis.com", path: "/v1/spaces/", det: detGenericSecret},
	{host: "hooks.zapier.com", path: "/hooks/catch/", det: detGenericSecret, short: true},
	{host: "maker.ifttt.com", path: "/trigger/", det: detGenericSecret},
	{host: "open.feishu.cn", path: "/open-apis/bot/v2/hook/", det: detGenericSecret},
	{host: "open.larksuite.com", path: "/open-apis/bot/v2/hook/", det: detGenericSecret},
	{host: "qyapi.weixin.qq.com", path: "/cgi-bin/webhook/send", det: detGenericSecret},
	{host: "oapi.dingtalk.com", path: "/robot/send", det: detGenericSecret},
	{host: ".make.com", path: "/", det: detGenericSecret},
	{host: ".m.pipedream.net", path: "", det: detGenericSecret, inHost: true},
	{host: "", path: "/hooks/", det: detGenericSecret},        // Mattermost, Rocket.Chat and others on their own hosts
	{host: "", path: "/webhook/", det: detGenericSecret},      // n8n and others on their own hosts
	{host: "", path: "/webhook-test/", det: detGenericSecret}, // n8n's test URLs
}

// urlAt handles the ':' of "://" at i: a webhook URL is matched whole, from its scheme.
func (c *Classifier) urlAt(sc *scanState, i int) {
	s := sc.s
	a := i
	for a > 0 && i-a < 16 && (isAlpha(s[a-1]) || s[a-1] == '+') {
		a--
	}
	if a == i || !equalFoldASCII(s[a:i], "https") && !equalFoldASCII(s[a:i], "http") || a > 0 && isWordByte(s[a-1]) {
		return
	}
	h := i + 3
	he := h
	for he < len(s) && (isAlnum(s[he]) || s[he] == '-' || s[he] == '.') {
		he++
	}
	host := strings.ToLower(s[h:he])
	if he < len(s) && s[he] == ':' { // a port
		he++
		for he < len(s) && isDigit(s[he]) {
			he++
		}
	}
	e := he
	for e < len(s) && isURLByte(s[e]) {
		e++
	}
	for e > he && strings.IndexByte(".,;:!?)'", s[e-1]) >= 0 {
		e-- // punctuation after the URL
	}
	path := s[he:e]
	for _, w := range webhooks {
		if !c.on(w.det) || !strings.HasPrefix(path, w.path) || !hostMatches(host, w.host) {
			continue
		}
		rest := path[len(w.path):]
		if w.host == "" && !strings.Contains(host, ".") || w.host == ".make.com" && !strings.HasPrefix(host, "hook.") {
			return
		}
		if w.inHost {
			rest = host[:strings.IndexByte(host, '.')]
		}
		if hasSecretRun(rest, w.short) {
			c.emit(sc, w.det, a, e)
		}
		return
	}
}

// hostMatches reports whether host is want, or ends with want when want begins with '.'.
func hostMatches(host, want string) bool {
	if want == "" || want[0] != '.' {
		return want == "" || host == want
	}
	return strings.HasSuffix(host, want) && len(host) > len(want)
}

// isURLByte reports a byte that may be part of a URL written in text.
func isURLByte(b byte) bool {
	return b > ' ' && b < 0x7f && strings.IndexByte("\"'`<>\\{}|^", b) < 0
}

// hasSecretRun reports whether a webhook URL's own part holds its secret: a run of 20 or more
// letters, digits, '-' and '_' that mixes classes and does not repeat a character six times
// (so T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX and {webhook.id} are not secrets). With
// short, a run of six or more after a numeric id will do, or a run of twelve or more that
// mixes capitals, small letters and digits (Zapier's catch URLs: whatever follows
// /hooks/catch/ names the hook, and a random run there is its key).
func hasSecretRun(rest string, short bool) bool {
	for i := 0; i < len(rest); {
		j := i
		for j < len(rest) && isB64URL(rest[j]) {
			j++
		}
		run := rest[i:j]
		switch {
		case len(run) >= 20 && classMix(run) >= 2 && !repeats(run, 6) && !isPlaceholder(run):
			return true
		case len(rest)-i >= 36 && isSecretUUID(rest[i:i+36]):
			return true // a UUID (Feishu, WeCom, n8n)
		case short && len(run) >= 6 && i > 1 && isDigit(rest[i-2]) && classMix(run) >= 2 && !repeats(run, 4):
			return true
		case short && len(run) >= 12 && classMix(run) == 3 && !repeats(run, 4) && !isPlaceholder(run) && !isWordlike(run):
			return true
		}
		i = j + 1
	}
	return false
}

// isUserinfoByte reports a byte of a URL's user information as people write it: letters,
// digits, the unreserved marks, percent-encodings and the sub-delimiters passwords use.
func isUserinfoByte(b byte) bool {
	return isAlnum(b) || strings.IndexByte("-._~!*+%$=^:", b) >= 0
}

// urlPasswordAt handles the '@' at i that may end the user information of a URL
// (scheme://user:password@host) or of a Go MySQL DSN (user:password@tcp(host)). It reports
// whether the text before i is user information, so that it is not read as an address.
func (c *Classifier) urlPasswordAt(sc *scanState, i int) bool {
	s := sc.s
	j := i
	for j > 0 && i-j < 256 && isUserinfoByte(s[j-1]) {
		j--
	}
	scheme := j >= 2 && s[j-1] == '/' && s[j-2] == '/' // scheme:// or a protocol-relative //
	dsn := strings.HasPrefix(s[i+1:], "tcp(") || strings.HasPrefix(s[i+1:], "unix(")
	if !scheme && !dsn {
		return false
	}
	colon := strings.IndexByte(s[j:i], ':')
	if colon < 0 {
		return scheme
	}
	user, pw := s[j:j+colon], s[j+colon+1:i]
	if c.on(detGenericSecret) && isPassword(pw, user) {
		c.emit(sc, detGenericSecret, j+colon+1, i)
	}
	return true
}

// commonPasswords are the words documentation writes where a password goes.
var commonPasswords = []string{"password", "passwd", "pass", "pwd", "secret", "changeme", "admin", "root", "guest", "test"}

// isPassword decides whether pw, given with user, is a password rather than a placeholder,
// a reference or a default: six characters or more, not a placeholder, a reference or one of
// the words documentation writes there, not the user name again, and not a run of one
// character.
func isPassword(pw, user string) bool {
	if len(pw) < 6 || len(pw) > maxGenericSecret || isPlaceholder(pw) || isReference(pw) || strings.EqualFold(pw, user) ||
		repeats(pw, 5) || isSequence(pw) {
		return false
	}
	for _, w := range commonPasswords {
		if equalFoldASCII(pw, w) {
			return false
		}
	}
	return true
}
