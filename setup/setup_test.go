package setup_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/setup"
)

// paths are the answers that put every file under dir.
func paths(dir string) setup.Answers {
	return setup.Answers{
		ConfigPath: filepath.Join(dir, "etc", "mailhost", "mailhost.toml"),
		DataDir:    filepath.Join(dir, "var", "lib", "mailhost"),
		UnitPath:   filepath.Join(dir, "etc", "systemd", "system", "mailhost.service"),
	}
}

// load reads path as `mailhost serve -config path` does, with nothing
// from the environment.
func load(t *testing.T, path string) *config.Config {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	flags := config.Register(fs)
	if err := fs.Parse([]string{"-config", path}); err != nil {
		t.Fatal(err)
	}
	cfg, err := flags.Load(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("load the written configuration: %v", err)
	}
	return cfg
}

// TestYes: with --yes and the flags' answers, setup asks nothing, writes a
// configuration the config package loads as production settings, a unit
// naming the paths, a data directory of mode 0700, and prints the domain's
// records.
func TestYes(t *testing.T) {
	dir := t.TempDir()
	a := paths(dir)
	a.Hostname, a.Domain = "MX.Example.NET.", "example.com"
	var out bytes.Buffer
	if err := setup.Run(setup.Options{Answers: a, Yes: true, In: strings.NewReader(""), Out: &out}); err != nil {
		t.Fatalf("Run = %v", err)
	}
	cfg := load(t, a.ConfigPath)
	for _, c := range []struct{ name, got, want string }{
		{"hostname", cfg.Hostname, "mx.example.net"},
		{"data", cfg.DataDir, a.DataDir},
		{"http", cfg.HTTP, setup.DefaultAPI},
		{"smtp", cfg.SMTP, ":25"},
		{"submission", cfg.Submission, ":587"},
		{"submissions", cfg.Submissions, ":465"},
		{"imap", cfg.IMAP, ":143"},
		{"imaps", cfg.IMAPS, ":993"},
		{"managesieve", cfg.ManageSieve, ":4190"},
		{"acme_email", cfg.ACMEEmail, "postmaster@example.com"},
		{"acme_http", cfg.ACMEHTTP, ":80"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !cfg.ACME {
		t.Error("acme is off")
	}
	st, err := os.Stat(a.DataDir)
	if err != nil || st.Mode().Perm() != 0o700 || !st.IsDir() {
		t.Errorf("data directory: %v, %v; want a directory of mode 0700", st.Mode(), err)
	}
	unit, err := os.ReadFile(a.UnitPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ExecStart=/usr/local/bin/mailhost serve -config " + a.ConfigPath + "\n",
		"ReadWritePaths=" + a.DataDir + "\n",
		"User=mailhost\n", "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n", "ProtectSystem=strict\n", "NoNewPrivileges=yes\n",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	// Not under /var/lib: systemd's StateDirectory would name another
	// directory.
	if strings.Contains(string(unit), "StateDirectory") {
		t.Error("unit has StateDirectory for a data directory outside /var/lib")
	}
	for _, want := range []string{
		"example.com. IN MX 10 mx.example.net.",
		`example.com. IN TXT "v=spf1 mx a:mx.example.net ~all"`,
		`_dmarc.example.com. IN TXT "v=DMARC1;`,
		"_submissions._tcp.example.com. IN SRV 5 1 465 mx.example.net.",
		"autoconfig.example.com. IN CNAME mx.example.net.",
		"mx.example.net. IN A ",
		"GET /domains/example.com/dns",
		"PTR", "systemctl enable --now mailhost",
		filepath.Join(a.DataDir, "initial-api-key"), filepath.Join(a.DataDir, "initial-postmaster-password"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "]: ") {
		t.Errorf("--yes asked a question:\n%s", out.String())
	}
}

// TestRefuseOverwrite: an existing unit (or configuration) is named and
// left alone, and nothing else is written; --force replaces both.
func TestRefuseOverwrite(t *testing.T) {
	dir := t.TempDir()
	a := paths(dir)
	a.Hostname, a.Domain = "mx.example.net", "example.com"
	if err := os.MkdirAll(filepath.Dir(a.UnitPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.UnitPath, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := setup.Options{Answers: a, Yes: true, In: strings.NewReader(""), Out: &bytes.Buffer{}}
	err := setup.Run(o)
	if !errors.Is(err, setup.ErrExists) || !strings.Contains(err.Error(), a.UnitPath) {
		t.Fatalf("Run over an existing unit = %v, want ErrExists naming %s", err, a.UnitPath)
	}
	if b, _ := os.ReadFile(a.UnitPath); string(b) != "mine\n" {
		t.Errorf("unit = %q, want it untouched", b)
	}
	for _, p := range []string{a.ConfigPath, a.DataDir} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was made by a refused run (%v)", p, err)
		}
	}
	o.Force = true
	if err := setup.Run(o); err != nil {
		t.Fatalf("Run -force = %v", err)
	}
	if b, _ := os.ReadFile(a.UnitPath); !strings.Contains(string(b), "[Service]") {
		t.Errorf("unit after -force = %q", b)
	}
	// The configuration now exists too: a second run without force
	// names it.
	o.Force = false
	if err := setup.Run(o); !errors.Is(err, setup.ErrExists) || !strings.Contains(err.Error(), a.ConfigPath) {
		t.Fatalf("second Run = %v, want ErrExists naming %s", err, a.ConfigPath)
	}
	load(t, a.ConfigPath)
}

// TestInteractive: the answers come over stdin, one a line; an empty line
// takes the default shown; a host name that is not fully qualified is
// explained and asked again.
func TestInteractive(t *testing.T) {
	dir := t.TempDir()
	a := paths(dir)
	in := strings.Join([]string{
		"vm",             // not fully qualified: asked again
		"localhost",      // loopback: asked again
		"mx.example.net", // host name
		"example.com",    // domain
		"",               // ACME contact: the default
		"10.0.0.5:8080",  // API
		a.ConfigPath, a.DataDir, a.UnitPath,
		"", // binary: the default
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := setup.Run(setup.Options{In: strings.NewReader(in), Out: &out}); err != nil {
		t.Fatalf("Run = %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"not a fully qualified domain name",
		"loopback name",
		"Contact address for the ACME CA (Let's Encrypt) [postmaster@example.com]: ",
		"Configuration file [" + setup.DefaultConfigPath + "]: ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	cfg := load(t, a.ConfigPath)
	if cfg.Hostname != "mx.example.net" || cfg.ACMEEmail != "postmaster@example.com" || cfg.HTTP != "10.0.0.5:8080" || cfg.DataDir != a.DataDir {
		t.Errorf("loaded hostname %q, acme_email %q, http %q, data %q", cfg.Hostname, cfg.ACMEEmail, cfg.HTTP, cfg.DataDir)
	}
	if unit, _ := os.ReadFile(a.UnitPath); !strings.Contains(string(unit), "ExecStart="+setup.DefaultBinary+" ") {
		t.Errorf("unit does not start the default binary:\n%s", unit)
	}
}

// TestBadAnswers: a wrong host name given as a flag is refused with the
// reason; answers that stay wrong, or run out, end the run; nothing is
// written.
func TestBadAnswers(t *testing.T) {
	for _, c := range []struct {
		name string
		o    setup.Options
		want string
	}{
		{"flag", setup.Options{Answers: setup.Answers{Hostname: "vm", Domain: "example.com"}, Yes: true}, "not a fully qualified"},
		{"yes without a domain", setup.Options{Answers: setup.Answers{Hostname: "mx.example.net"}, Yes: true}, "no default"},
		{"three wrong answers", setup.Options{In: strings.NewReader("vm\nlocalhost\nbad_name.example\n")}, "after 3 tries"},
		{"stdin ends", setup.Options{In: strings.NewReader("mx.example.net\n")}, "no answer"},
		{"relative path", setup.Options{Answers: setup.Answers{Hostname: "mx.example.net", Domain: "example.com", ConfigPath: "mailhost.toml"}, Yes: true}, "not absolute"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := paths(dir)
			if c.o.ConfigPath == "" {
				c.o.ConfigPath = p.ConfigPath
			}
			c.o.DataDir, c.o.UnitPath = p.DataDir, p.UnitPath
			if c.o.In == nil {
				c.o.In = strings.NewReader("")
			}
			c.o.Out = &bytes.Buffer{}
			err := setup.Run(c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run = %v, want an error with %q", err, c.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a refused run wrote %v", entries)
			}
		})
	}
}

// TestUnitMatchesContrib: the unit setup writes for the default paths is
// contrib/systemd/mailhost.service, directive for directive, plus the
// data directory made writable by name (ReadWritePaths), so that the
// hardening docs/operations.md describes is the one both give.
func TestUnitMatchesContrib(t *testing.T) {
	contrib, err := os.ReadFile("../contrib/systemd/mailhost.service")
	if err != nil {
		t.Fatal(err)
	}
	a := setup.Answers{ConfigPath: setup.DefaultConfigPath, DataDir: setup.DefaultDataDir, UnitPath: setup.DefaultUnitPath, Binary: setup.DefaultBinary}
	got := directives(string(setup.Unit(a)))
	want := append(directives(string(contrib)), "ReadWritePaths="+setup.DefaultDataDir)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("unit directives differ from contrib's:\n got %q\nwant %q", got, want)
	}
}

// directives are a unit's lines that are neither comments nor blank.
func directives(unit string) []string {
	var out []string
	for _, l := range strings.Split(unit, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
