package builtin

import "strings"

// Credentials on command lines: the value of a flag that takes one (--password <value>,
// --token <value>, --api-key <value>, …), the password of a user:password flag (curl -u,
// --user, httpie's -a) and a password written right after -p (mysql -p<password>) or after
// -p where the command logs in (docker login -p, sshpass -p, twine -p). A flag written with
// '=' (--password=<value>) is an assignment (assign.go).

// secretFlags are the long flags whose next argument is a credential.
var secretFlags = []string{
	"password", "passwd", "pass", "token", "api-key", "apikey", "api-token", "access-token",
	"auth-token", "secret", "client-secret", "secret-key", "private-token", "management-token",
	"account-key", "sas-token",
}

// singleDashSecretFlags are the long flags written with one dash whose next argument is a
// password: keytool's -storepass and -keypass, openssl's -pass and -passin (pass:<password>).
var singleDashSecretFlags = []string{"storepass", "keypass", "srcstorepass", "deststorepass", "password", "pass", "passin", "passout"}

// userFlags are the flags whose next argument is user:password.
var userFlags = []string{"-u", "--user", "-a", "--auth", "--proxy-user"}

// loginWords are the commands after which "-p <value>" is a password, not a port or a path.
var loginWords = []string{"login", "sshpass", "twine", "mysql", "mysqldump", "mariadb", "redis-cli"}

// flagAt handles a '-' at i that begins a command-line flag (after a blank or a quote).
func (c *Classifier) flagAt(sc *scanState, i int) {
	s := sc.s
	if !c.on(detGenericSecret) || i > 0 && s[i-1] != ' ' && s[i-1] != '\t' && s[i-1] != '\'' && s[i-1] != '"' {
		return
	}
	f := i
	for f < len(s) && f-i < 24 && (isAlnum(s[f]) || s[f] == '-') {
		f++
	}
	flag := s[i:f]
	if f >= len(s) {
		return
	}
	if slicesContainsFold(userFlags, flag) && s[f] == ' ' {
		c.userPassArg(sc, f+1, flag)
		return
	}
	single := !strings.HasPrefix(flag, "--") && slicesContainsFold(singleDashSecretFlags, flag[1:])
	if strings.HasPrefix(flag, "-p") && !strings.HasPrefix(flag, "--") && !single {
		c.shortPasswordFlag(sc, i, i+2)
		return
	}
	long := strings.HasPrefix(flag, "--") && slicesContainsFold(secretFlags, flag[2:])
	if !long && !single || s[f] != ' ' {
		return
	}
	v := f + 1
	if strings.HasPrefix(s[v:], "pass:") {
		v += len("pass:") // openssl: -pass pass:<password>
	}
	q := byte(0)
	if v < len(s) && (s[v] == '"' || s[v] == '\'') {
		q = s[v]
		v++
	}
	ve := v
	for ve < len(s) && ve-v <= maxGenericSecret && isValueByte(s[ve], q) {
		ve++
	}
	if ve == v || ve-v > maxGenericSecret || q != 0 && (ve == len(s) || s[ve] != q) || s[v] == '-' {
		return
	}
	value := s[v:ve]
	passwordFlag := strings.Contains(flag, "pass")
	if isGenericSecret(value) || passwordFlag && isPassword(value, "") && !isWordlikeName(value) || isSecretUUID(value) {
		c.emit(sc, detGenericSecret, v, ve)
	}
}

// userPassArg reads user:password at v (quoted or not), the argument of flag, and reports the
// password; after redis-cli's -a the argument is the password alone.
func (c *Classifier) userPassArg(sc *scanState, v int, flag string) {
	s := sc.s
	q := byte(0)
	if v < len(s) && (s[v] == '"' || s[v] == '\'') {
		q = s[v]
		v++
	}
	ve := v
	for ve < len(s) && ve-v <= maxGenericSecret && isValueByte(s[ve], q) {
		ve++
	}
	if q != 0 && (ve == len(s) || s[ve] != q) {
		return
	}
	colon := strings.IndexByte(s[v:ve], ':')
	if colon < 0 && flag == "-a" && loginLine(s, v) && isPassword(s[v:ve], "") && classMix(s[v:ve]) >= 2 {
		c.emit(sc, detGenericSecret, v, ve) // redis-cli -a <password>
		return
	}
	if colon < 0 {
		return // user:password with an empty user (curl -u :<token>) is a password too
	}
	user, pw := s[v:v+colon], s[v+colon+1:ve]
	if isPassword(pw, user) {
		c.emit(sc, detGenericSecret, v+colon+1, ve)
	}
}

// shortPasswordFlag handles -p at [i, f): the password attached (-pS3cret, as mysql takes
// it) or, after a command that logs in, the next argument.
func (c *Classifier) shortPasswordFlag(sc *scanState, i, f int) {
	s := sc.s
	if !loginLine(s, i) {
		return
	}
	v := f
	if v < len(s) && s[v] == ' ' {
		v++
	}
	q := byte(0)
	if v < len(s) && (s[v] == '"' || s[v] == '\'') {
		q = s[v]
		v++
	}
	ve := v
	for ve < len(s) && ve-v <= maxGenericSecret && isValueByte(s[ve], q) {
		ve++
	}
	if ve == v || q != 0 && (ve == len(s) || s[ve] != q) || s[v] == '-' {
		return
	}
	if pw := s[v:ve]; isPassword(pw, "") && !allIn(pw, cDigit) {
		c.emit(sc, detGenericSecret, v, ve)
	}
}

// loginLine reports whether the line before i runs a command that logs in, looking back no
// further than the left context the hold-back hint covers.
func loginLine(s string, i int) bool {
	from := max(0, i-assignContext)
	line := s[from+strings.LastIndexByte(s[from:i], '\n')+1 : i]
	for _, w := range loginWords {
		if strings.Contains(line, w) {
			return true
		}
	}
	return false
}

// slicesContainsFold reports whether list holds s, ignoring ASCII case.
func slicesContainsFold(list []string, s string) bool {
	for _, w := range list {
		if strings.EqualFold(w, s) {
			return true
		}
	}
	return false
}
