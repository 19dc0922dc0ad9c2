package check

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// exactVersion is a tag that names one release: major.minor.patch, with
// an optional v and suffix (1.26.8-bookworm, 2.21.0, v1.2.3-alpine3.20).
var exactVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+._][0-9A-Za-z.+_-]+)?$`)

// digest is a content address (the strongest pin).
var digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// checkImageRef says why ref does not pin one image, or nil: a digest
// pins; otherwise the tag must be an exact version (no tag, latest, a
// major-only 8 or a minor 8.4 all float).
func checkImageRef(ref string) error {
	if strings.ContainsAny(ref, "${}") {
		return fmt.Errorf("%q: a variable: the version cannot be checked", ref)
	}
	name, dig, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if !digest.MatchString(dig) {
			return fmt.Errorf("%q: digest %q is not sha256:<64 hex>", ref, dig)
		}
		return nil
	}
	// The tag follows the last colon after the last slash (a registry
	// host may carry a port: host:5000/repo).
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	switch {
	case name == "":
		return fmt.Errorf("%q: no image name", ref)
	case tag == "":
		return fmt.Errorf("%q: no tag (means latest)", ref)
	case !exactVersion.MatchString(tag):
		return fmt.Errorf("%q: tag %q is not an exact major.minor.patch version", ref, tag)
	}
	return nil
}

// composeImages are the images of a compose file by service.
func composeImages(data []byte) (map[string]string, error) {
	var f struct {
		Services map[string]struct {
			Image string `json:"image"`
			Build any    `json:"build"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if len(f.Services) == 0 {
		return nil, fmt.Errorf("no services")
	}
	out := map[string]string{}
	for name, s := range f.Services {
		switch {
		case s.Image != "":
			out[name] = s.Image
		case s.Build == nil:
			return nil, fmt.Errorf("service %s: neither image nor build", name)
		}
	}
	return out, nil
}

// dockerfileImages are the images a Dockerfile pulls: its syntax
// frontend, each FROM that is not an earlier stage, and each COPY --from
// that is not a stage. scratch is no image.
func dockerfileImages(data []byte) ([]string, error) {
	var out []string
	stages := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	first := true
	var line string
	for sc.Scan() {
		raw := strings.TrimSpace(sc.Text())
		if first && strings.HasPrefix(raw, "#") {
			k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(raw, "#")), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "syntax") {
				out = append(out, strings.TrimSpace(v))
			}
			continue
		}
		if raw == "" || strings.HasPrefix(raw, "#") {
			continue
		}
		first = false
		if strings.HasSuffix(raw, `\`) {
			line += strings.TrimSuffix(raw, `\`) + " "
			continue
		}
		line += raw
		fields := strings.Fields(line)
		line = ""
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			args := fields[1:]
			for len(args) > 0 && strings.HasPrefix(args[0], "--") {
				args = args[1:]
			}
			if len(args) == 0 {
				return nil, fmt.Errorf("FROM without an image")
			}
			img := args[0]
			if !stages[strings.ToLower(img)] && img != "scratch" {
				out = append(out, img)
			}
			if len(args) >= 3 && strings.EqualFold(args[1], "AS") {
				stages[strings.ToLower(args[2])] = true
			}
		case "COPY", "ADD":
			for _, a := range fields[1:] {
				if from, ok := strings.CutPrefix(a, "--from="); ok && !stages[strings.ToLower(from)] {
					out = append(out, from)
				}
			}
		}
	}
	return out, sc.Err()
}

// chartImage is the image the chart's values.yaml runs: repository with
// its tag (empty: the chart's appVersion) or digest.
func chartImage(values []byte, appVersion string) (string, error) {
	var v struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
			Digest     string `json:"digest"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil {
		return "", err
	}
	if v.Image.Digest != "" {
		return v.Image.Repository + "@" + v.Image.Digest, nil
	}
	tag := v.Image.Tag
	if tag == "" {
		tag = appVersion
	}
	return v.Image.Repository + ":" + tag, nil
}
