// Package validation checks the names the policy compiler validates — DNS labels, label
// keys and label values — with the rules and the messages of
// k8s.io/apimachinery/pkg/util/validation, which the guard does not link. Each function
// returns the messages of what is wrong, none when the value is valid; a differential test
// holds them to apimachinery's byte for byte. The checks are written out byte by byte
// rather than as regular expressions, so that the guard compiles none at start-up.
package validation

import (
	"fmt"
	"strings"
)

const (
	dns1123LabelFmt     = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123LabelErrMsg  = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	dns1123SubdomainFmt = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1123SubdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	labelKeyFmt         = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	labelKeyErrMsg      = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValueFmt       = "(" + labelKeyFmt + ")?"
	labelValueErrMsg    = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"

	// DNS1123LabelMaxLength is the longest DNS label.
	DNS1123LabelMaxLength = 63
	// DNS1123SubdomainMaxLength is the longest DNS subdomain.
	DNS1123SubdomainMaxLength = 253
	// LabelValueMaxLength is the longest label value, and the longest name part of a key.
	LabelValueMaxLength = 63
)

// IsDNS1123Label checks a lowercase RFC 1123 label (a category id).
func IsDNS1123Label(value string) []string {
	var errs []string
	if len(value) > DNS1123LabelMaxLength {
		errs = append(errs, fmt.Sprintf("must be no more than %d characters", DNS1123LabelMaxLength))
	}
	if !isDNS1123Label(value) {
		if isDNS1123Subdomain(value) {
			errs = append(errs, "must not contain dots")
		} else {
			errs = append(errs, regexError(dns1123LabelErrMsg, dns1123LabelFmt, "my-name", "123-abc"))
		}
	}
	return errs
}

// dns1123SubdomainErrors checks the DNS prefix of a label key.
func dns1123SubdomainErrors(value string) []string {
	var errs []string
	if len(value) > DNS1123SubdomainMaxLength {
		errs = append(errs, maxBytesError(DNS1123SubdomainMaxLength))
	}
	if !isDNS1123Subdomain(value) {
		errs = append(errs, regexError(dns1123SubdomainMsg, dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// IsQualifiedName checks a label key: a name with an optional DNS subdomain prefix and a
// slash (app.kubernetes.io/name).
func IsQualifiedName(value string) []string {
	var errs []string
	var name string
	switch parts := strings.Split(value, "/"); len(parts) {
	case 1:
		name = parts[0]
	case 2:
		prefix := parts[0]
		name = parts[1]
		if prefix == "" {
			errs = append(errs, "prefix part must be non-empty")
		} else {
			for _, m := range dns1123SubdomainErrors(prefix) {
				errs = append(errs, "prefix part "+m)
			}
		}
	default:
		return []string{"a valid label key " + regexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc") +
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}
	}
	if name == "" {
		errs = append(errs, "name part must be non-empty")
	} else if len(name) > LabelValueMaxLength {
		errs = append(errs, "name part "+maxBytesError(LabelValueMaxLength))
	}
	if !isLabelName(name) {
		errs = append(errs, "name part "+regexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// IsValidLabelValue checks a label value: empty, or a label name.
func IsValidLabelValue(value string) []string {
	var errs []string
	if len(value) > LabelValueMaxLength {
		errs = append(errs, maxBytesError(LabelValueMaxLength))
	}
	if value != "" && !isLabelName(value) {
		errs = append(errs, regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}

func maxBytesError(n int) string { return fmt.Sprintf("must be no more than %d bytes", n) }

// regexError says what a value must look like, with examples and the pattern it fails.
func regexError(msg, pattern string, examples ...string) string {
	if len(examples) == 0 {
		return msg + " (regex used for validation is '" + pattern + "')"
	}
	quoted := make([]string, len(examples))
	for i, e := range examples {
		quoted[i] = "'" + e + "', "
	}
	return msg + " (e.g. " + strings.Join(quoted, " or ") + "regex used for validation is '" + pattern + "')"
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || c >= 'A' && c <= 'Z' }

// isDNS1123Label: dns1123LabelFmt, whole string.
func isDNS1123Label(s string) bool {
	if s == "" || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain: dns1123SubdomainFmt, whole string — labels joined by dots.
func isDNS1123Subdomain(s string) bool {
	for _, label := range strings.Split(s, ".") {
		if !isDNS1123Label(label) {
			return false
		}
	}
	return true
}

// isLabelName: labelKeyFmt, whole string.
func isLabelName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}
