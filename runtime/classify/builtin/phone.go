package builtin

import "strings"

// isPhone accepts three shapes and nothing else, so that dates, versions, amounts and plain
// digit runs stay out:
//   - international: '+', a country code of 1–3 digits, then groups of 2–8 digits (the first
//     may be a one-digit area code; an optional "(0)" trunk prefix), 8–15 digits in all; or
//     '+' and 8–15 contiguous digits (E.164);
//   - North American: [1] NXX NXX XXXX with one kind of separator or "(NXX)" for the area code;
//   - national with a trunk 0: "020 7946 0958", "07700 900123", "030 12345678",
//     "06-12345678", "01 23 45 67 89": 10–11 digits.
func isPhone(s string, t *numToken, a, b int) bool {
	digits, sep, _ := groupsShape(t, a, b)
	ng := b - a
	g := t.g[a:b]
	if a == 0 && t.plus {
		if digits < 8 || digits > 15 || s[g[0].start] == '0' {
			return false
		}
		if ng == 1 {
			// Contiguous: at least 10 digits, and not a round or counting number such as
			// +100000000 or +123456789 from a table of signed integers.
			return digits >= 10 && !repetitive(s[g[0].start:g[0].end])
		}
		if g[0].len() > 3 || g[0].paren {
			return false
		}
		for k := 1; k < ng; k++ {
			trunk := g[k].paren && s[g[k].start:g[k].end] == "0"
			// The group after the country code may be a one-digit area code: +33 1, +61 2.
			minLen := 2
			if k == 1 {
				minLen = 1
			}
			if !trunk && (g[k].len() < minLen || g[k].len() > 8) {
				return false
			}
		}
		return true
	}
	// International with the 00 exit code instead of '+': "0044 20 7946 0958". The first
	// group is 00 and a country calling code, and 9–15 digits follow the 00.
	if g[0].len() >= 3 && g[0].len() <= 5 && !g[0].paren && ng >= 2 && s[g[0].start:g[0].start+2] == "00" {
		if !countryCode(s[g[0].start+2:g[0].end]) || digits-2 < 9 || digits-2 > 15 {
			return false
		}
		for k := 1; k < ng; k++ {
			trunk := g[k].paren && s[g[k].start:g[k].end] == "0"
			if !trunk && (g[k].len() < 2 && k > 1 || g[k].len() > 8) {
				return false
			}
		}
		return true
	}
	// North American Numbering Plan.
	if n := ng; n == 3 || n == 4 && g[0].len() == 1 && s[g[0].start] == '1' && !g[0].paren {
		h := g[n-3:]
		if h[0].len() == 3 && h[1].len() == 3 && h[2].len() == 4 &&
			s[h[0].start] >= '2' && s[h[1].start] >= '2' && !h[1].paren && !h[2].paren {
			if h[0].paren {
				return h[2].sep == '-' || h[2].sep == ' ' || h[2].sep == '.'
			}
			return sep == '-' || sep == '.' || sep == ' '
		}
	}
	// National numbers with a trunk prefix 0.
	if s[g[0].start] != '0' || digits < 10 || digits > 11 || ng < 2 {
		return false
	}
	for k := 1; k < ng; k++ {
		if g[k].paren {
			return false
		}
	}
	l0 := g[0].len()
	if l0 == 2 && ng == 5 && digits == 10 { // French style: five pairs, 01–09 first
		zeros, counting := 0, true
		for k := range g {
			if g[k].len() != 2 {
				return false
			}
			if s[g[k].start:g[k].end] == "00" {
				zeros++
			}
			counting = counting && (k == 0 || pairValue(s, g[k]) == pairValue(s, g[k-1])+1)
		}
		// Hex dumps ("03 04 14 00 00", "01 02 03 04 05") are pairs too; real numbers rarely
		// repeat 00 or count up.
		if s[g[0].start+1] == '0' || zeros > 1 || counting {
			return false
		}
		return g[0].paren || sep == ' ' || sep == '.' || sep == '-'
	}
	if g[0].paren {
		// "(020) 7946 0958": the separator after the parenthesis is free, the others agree.
		_, sep, _ = groupsShape(t, a+1, b)
	}
	if sep != ' ' && sep != '-' && sep != 0 || l0 < 2 || l0 > 5 || ng > 4 {
		return false
	}
	if l0 == 2 && !(ng == 2 && g[1].len() == 8) {
		return false
	}
	for k := 1; k < ng; k++ {
		if g[k].len() < 3 {
			return false
		}
	}
	return true
}

// countryCode reports whether cc is exactly an ITU-T E.164 country calling code as its digits
// say: 1 and 7 stand alone, a few dozen codes have two digits, and the zones 2, 3, 4, 5, 6,
// 8 and 9 hold the three-digit ones.
func countryCode(cc string) bool {
	switch {
	case len(cc) == 0 || cc[0] == '0':
		return false
	case cc[0] == '1' || cc[0] == '7':
		return len(cc) == 1
	}
	if len(cc) < 2 {
		return false
	}
	if strings.Contains(" 20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98 ", " "+cc[:2]+" ") {
		return len(cc) == 2
	}
	return len(cc) == 3 && strings.Contains(" 21 22 23 24 25 26 29 35 37 38 42 50 59 67 68 69 85 87 88 96 97 99 ", " "+cc[:2]+" ")
}

func pairValue(s string, g numGroup) int { return int(s[g.start]-'0')*10 + int(s[g.start+1]-'0') }

// repetitive reports digit strings with a run of five equal digits or of six counting up or
// down by one.
func repetitive(d string) bool {
	same, up, down := 1, 1, 1
	for i := 1; i < len(d); i++ {
		same, up, down = next(same, d[i] == d[i-1]), next(up, d[i] == d[i-1]+1), next(down, d[i]+1 == d[i-1])
		if same >= 5 || up >= 6 || down >= 6 {
			return true
		}
	}
	return false
}

func next(run int, cont bool) int {
	if cont {
		return run + 1
	}
	return 1
}
