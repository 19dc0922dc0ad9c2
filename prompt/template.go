package prompt

import "strings"

// Placeholders are {{name}} or {{ name }} with name [A-Za-z_][A-Za-z0-9_]*
// (spaces and tabs allowed inside the braces). A "{{" that does not start a
// valid placeholder is literal text.

// placeholderAt reports the placeholder starting at s[i] ("{{" there), its
// name and the index just after it.
func placeholderAt(s string, i int) (name string, end int, ok bool) {
	return nameThenClose(s, i+2)
}

// nameThenClose reads, from s[j], blanks, a name ([A-Za-z_][A-Za-z0-9_]*),
// blanks and "}}": the name and the index after the braces. Placeholders
// ({{name}}) and fragment includes ({{> alias}}) share it.
func nameThenClose(s string, j int) (name string, end int, ok bool) {
	j = skipBlanks(s, j)
	start := j
	for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > start && s[j] >= '0' && s[j] <= '9') {
		j++
	}
	if j == start {
		return "", 0, false
	}
	name = s[start:j]
	j = skipBlanks(s, j)
	if !strings.HasPrefix(s[j:], "}}") {
		return "", 0, false
	}
	return name, j + 2, true
}

// skipBlanks is the index of the first byte from j that is not a space or
// a tab.
func skipBlanks(s string, j int) int {
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j
}

// Placeholders lists the placeholder names of s in order of appearance,
// each once.
func Placeholders(s string) []string {
	var names []string
	seen := map[string]bool{}
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], "{{")
		if k < 0 {
			break
		}
		i += k
		if name, end, ok := placeholderAt(s, i); ok {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
			i = end
			continue
		}
		i++
	}
	return names
}

// Render substitutes every placeholder of s with vars[name] in one pass:
// a substituted value is never expanded again. Names missing from vars
// render as the empty string (callers check required variables first).
func Render(s string, vars map[string]string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], "{{")
		if k < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+k])
		i += k
		if name, end, ok := placeholderAt(s, i); ok {
			b.WriteString(vars[name])
			i = end
			continue
		}
		b.WriteByte('{')
		i++
	}
	return b.String()
}

// renderedSize is the size of Render(s, vars) as measured by size, summed
// over the literal runs of s and the values substituted into it (varSize
// holds each value's size, measured once), so the size of an answer is
// known before it is rendered. Runs are split at "{{", which is ASCII, so
// size sees whole UTF-8 sequences.
func renderedSize(s string, vars map[string]string, varSize map[string]int64, size func(string) int64) int64 {
	var n int64
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], "{{")
		if k < 0 {
			n += size(s[i:])
			break
		}
		n += size(s[i : i+k])
		i += k
		if name, end, ok := placeholderAt(s, i); ok {
			vs, seen := varSize[name]
			if !seen {
				vs = size(vars[name])
				varSize[name] = vs
			}
			n += vs
			i = end
			continue
		}
		n++ // a literal '{'
		i++
	}
	return n
}
