// Command readmewalk runs the docs' walkthroughs as a reader pastes
// them: every ```sh block marked <!-- walkthrough --> of the files named,
// file after file and in order within each, in one bash, against one fresh
// promptd (built from this tree, on a free port, with a fresh data
// directory), and compares what each block prints with the ```text block
// that follows it in its file. A later file's blocks see what the earlier
// ones left (the quick start's agent shows up in the prompts-as-code pull).
//
//	go run ./internal/harness/readmewalk [-print] FILE.md...
//
// The reader's setup is done for them, as the pages' unmarked setup
// blocks do it: promptd and promptctl are built into a bin directory put
// first on PATH; PROMPTD_URL is promptd's address and PROMPTD_TOKEN its
// generated admin token; the blocks run in a fresh directory whose ./data
// is promptd's data directory (so `grep '^admin:' data/tokens` works);
// 127.0.0.1:8080 in a block is replaced by promptd's address. Output is
// stdout and stderr together, as a terminal shows them.
//
// Comparison rules (the placeholder rule): lines are compared after
// trimming trailing blanks and collapsing every run of blanks to one
// space (table columns widen with their values); in an expected line,
// <anything between angle brackets> matches any text (ids, hashes,
// timestamps, temp paths), and a line that is only ... matches any number
// of lines. -print prints each block's actual output instead.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// block is one walkthrough step: the commands and what they print.
type block struct {
	file     string // the page it is in
	line     int    // of the ```sh fence
	script   string
	expected []string
}

const marker = "<!-- walkthrough -->"

func main() {
	printOnly := flag.Bool("print", false, "print each block's actual output; compare nothing")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: readmewalk [-print] FILE.md...")
		os.Exit(2)
	}
	if err := run(flag.Args(), *printOnly, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "readmewalk: %v\n", err)
		os.Exit(1)
	}
}

func run(files []string, printOnly bool, out io.Writer) error {
	var blocks []block
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		bs, err := extract(f, string(src))
		if err != nil {
			return err
		}
		if len(bs) == 0 {
			return fmt.Errorf("%s has no %s blocks", f, marker)
		}
		blocks = append(blocks, bs...)
	}
	tmp, err := os.MkdirTemp("", "readmewalk-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, work := filepath.Join(tmp, "bin"), filepath.Join(tmp, "work")
	data := filepath.Join(work, "data")
	for _, d := range []string{bin, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, cmd := range []string{"promptd", "promptctl"} {
		b := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), "./cmd/"+cmd)
		b.Stdout, b.Stderr = os.Stderr, os.Stderr
		if err := b.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/%s: %w", cmd, err)
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	stop, err := startPromptd(filepath.Join(bin, "promptd"), addr, data, filepath.Join(tmp, "promptd.log"))
	if err != nil {
		return err
	}
	defer stop()
	token, err := adminToken(filepath.Join(data, "tokens"))
	if err != nil {
		return err
	}

	outputs, err := runBlocks(blocks, addr, bin, work, token)
	if err != nil {
		return err
	}
	failed := 0
	for i, b := range blocks {
		if printOnly {
			fmt.Fprintf(out, "--- block %d (%s:%d)\n%s\n", i+1, b.file, b.line, strings.Join(outputs[i], "\n"))
			continue
		}
		if why := match(b.expected, outputs[i]); why != "" {
			failed++
			fmt.Fprintf(out, "FAIL block %d (%s:%d): %s\n--- ran\n%s\n--- printed\n%s\n--- %s shows\n%s\n\n", i+1, b.file, b.line, why,
				strings.TrimSpace(b.script), strings.Join(outputs[i], "\n"), b.file, strings.Join(b.expected, "\n"))
		}
	}
	if failed > 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "promptd.log"))
		fmt.Fprintf(out, "--- promptd's log (last 2000 bytes)\n%s\n", tail(log, 2000))
		return fmt.Errorf("%d of %d walkthrough blocks printed something else than their page shows", failed, len(blocks))
	}
	if !printOnly {
		fmt.Fprintf(out, "ok: %d walkthrough blocks of %s, pasted in sequence, printed what they show\n", len(blocks), strings.Join(files, ", "))
	}
	return nil
}

// extract finds each ```sh block after the marker and the ```text block
// that follows it.
func extract(name, src string) ([]block, error) {
	lines := strings.Split(src, "\n")
	var blocks []block
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != marker {
			continue
		}
		j := next(lines, i+1)
		if j >= len(lines) || strings.TrimSpace(lines[j]) != "```sh" {
			return nil, fmt.Errorf("%s:%d: %s is not followed by a ```sh block", name, i+1, marker)
		}
		body, end, err := fence(name, lines, j)
		if err != nil {
			return nil, err
		}
		b := block{file: name, line: j + 1, script: strings.Join(body, "\n") + "\n"}
		k := next(lines, end+1)
		if k >= len(lines) || strings.TrimSpace(lines[k]) != "```text" {
			return nil, fmt.Errorf("%s:%d: the walkthrough block is not followed by a ```text block of its output", name, j+1)
		}
		if b.expected, end, err = fence(name, lines, k); err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
		i = end
	}
	return blocks, nil
}

// next is the first non-blank line at or after i.
func next(lines []string, i int) int {
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	return i
}

// fence returns the lines inside the fence opened at line i, and the
// closing line's index.
func fence(name string, lines []string, i int) ([]string, int, error) {
	for j := i + 1; j < len(lines); j++ {
		if strings.TrimSpace(lines[j]) == "```" {
			return lines[i+1 : j], j, nil
		}
	}
	return nil, 0, fmt.Errorf("%s:%d: the fence is never closed", name, i+1)
}

const sentinel = "@@readmewalk-block-end@@"

// runBlocks runs every block in one bash, as pasted in sequence, and
// returns each block's output lines.
func runBlocks(blocks []block, addr, bin, work, token string) ([][]string, error) {
	var script strings.Builder
	script.WriteString("exec 2>&1\n")
	for _, b := range blocks {
		script.WriteString(strings.ReplaceAll(b.script, "127.0.0.1:8080", addr))
		script.WriteString("echo " + sentinel + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc")
	cmd.Dir = work
	cmd.Stdin = strings.NewReader(script.String())
	cmd.Env = append(cleanEnv(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PROMPTD_URL=http://"+addr, "PROMPTD_TOKEN="+token, "NO_COLOR=1", "TERM=dumb")
	raw, err := cmd.Output()
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("the walkthroughs did not finish within 5 minutes")
	}
	outputs := make([][]string, len(blocks))
	n := 0
	var cur []string
	for _, line := range strings.Split(string(raw), "\n") {
		if before, found := strings.CutSuffix(line, sentinel); found {
			if before != "" {
				cur = append(cur, before)
			}
			if n < len(outputs) {
				outputs[n] = cur
			}
			n, cur = n+1, nil
			continue
		}
		cur = append(cur, line)
	}
	if n != len(blocks) {
		return nil, fmt.Errorf("bash stopped after block %d of %d (%v); it printed:\n%s", n, len(blocks), err, strings.Join(cur, "\n"))
	}
	return outputs, nil
}

var blanks = regexp.MustCompile(`[ \t]+`)

func normalize(s string) string { return strings.TrimSpace(blanks.ReplaceAllString(s, " ")) }

var placeholder = regexp.MustCompile(`<[^<>]+>`)

// pattern is the regexp of an expected line: literal text, with each
// <placeholder> matching any text.
func pattern(expected string) *regexp.Regexp {
	e := normalize(expected)
	var re strings.Builder
	re.WriteString("^")
	last := 0
	for _, loc := range placeholder.FindAllStringIndex(e, -1) {
		re.WriteString(regexp.QuoteMeta(e[last:loc[0]]))
		re.WriteString(".*?")
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(e[last:]) + "$")
	return regexp.MustCompile(re.String())
}

// match compares actual output lines with the expected ones; "" when
// they match, else why not.
func match(expected, actual []string) string {
	exp, act := trimBlank(expected), trimBlank(actual)
	var walk func(i, j int) (bool, int, int)
	walk = func(i, j int) (bool, int, int) {
		for i < len(exp) {
			if normalize(exp[i]) == "..." {
				for k := j; k <= len(act); k++ {
					if ok, _, _ := walk(i+1, k); ok {
						return true, 0, 0
					}
				}
				return false, i, j
			}
			if j >= len(act) || !pattern(exp[i]).MatchString(normalize(act[j])) {
				return false, i, j
			}
			i, j = i+1, j+1
		}
		return j == len(act), i, j
	}
	ok, i, j := walk(0, 0)
	if ok {
		return ""
	}
	switch {
	case i < len(exp) && j < len(act):
		return fmt.Sprintf("expected line %d %q, printed %q", i+1, exp[i], act[j])
	case i < len(exp):
		return fmt.Sprintf("expected line %d %q, but the output ended", i+1, exp[i])
	case j < len(act):
		return fmt.Sprintf("printed more than the page shows, from %q", act[j])
	}
	return "no match"
}

// trimBlank drops leading and trailing blank lines.
func trimBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// cleanEnv is this process's environment without PROMPTD_* and
// TRACEPARENT: promptd and the blocks see only what a fresh terminal and
// the pages' setup blocks give them.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PROMPTD_") && !strings.HasPrefix(kv, "TRACEPARENT=") {
			env = append(env, kv)
		}
	}
	return env
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startPromptd starts promptd on addr with a fresh data directory, waits
// until /readyz answers 200, and returns what stops it.
func startPromptd(bin, addr, data, logPath string) (func(), error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(cleanEnv(), "PROMPTD_ADDR="+addr, "PROMPTD_DATA_DIR="+data)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			logf.Close()
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("promptd exited (%v):\n%s", err, tail(log, 2000))
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New("promptd was not ready within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// adminToken reads the admin secret promptd generated (lines
// role:name:secret).
func adminToken(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if parts := strings.SplitN(sc.Text(), ":", 3); len(parts) == 3 && parts[0] == "admin" {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("%s names no admin token", path)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
