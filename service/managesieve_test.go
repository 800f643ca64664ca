package service

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"
)

// sieveClient is a raw ManageSieve client over a real connection.
type sieveClient struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

// dialSieve connects, reads the greeting and, with roots, goes over to
// TLS with STARTTLS.
func dialSieve(t *testing.T, addr string, roots *x509.CertPool) *sieveClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &sieveClient{t: t, conn: conn, br: bufio.NewReader(conn)}
	if g := strings.Join(c.response(), "\n"); !strings.Contains(g, `"STARTTLS"`) {
		t.Fatalf("greeting without STARTTLS: %s", g)
	}
	if roots == nil {
		return c
	}
	if got := c.do("STARTTLS"); !strings.HasPrefix(got, "OK") {
		t.Fatalf("STARTTLS = %q", got)
	}
	tc := tls.Client(conn, &tls.Config{ServerName: "mx.test", RootCAs: roots})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	c.conn, c.br = tc, bufio.NewReader(tc)
	if caps := strings.Join(c.response(), "\n"); !strings.Contains(caps, `"SASL" "PLAIN"`) {
		t.Fatalf("capabilities after STARTTLS: %s", caps)
	}
	return c
}

// response reads up to the OK, NO or BYE line, literals inline.
func (c *sieveClient) response() []string {
	c.t.Helper()
	var lines []string
	for {
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		l, err := c.br.ReadString('\n')
		if err != nil {
			c.t.Fatalf("read after %q: %v", lines, err)
		}
		l = strings.TrimRight(l, "\r\n")
		if strings.HasPrefix(l, "{") && strings.HasSuffix(l, "}") {
			n, _ := strconv.Atoi(l[1 : len(l)-1])
			buf := make([]byte, n)
			if _, err := io.ReadFull(c.br, buf); err != nil {
				c.t.Fatal(err)
			}
			rest, _ := c.br.ReadString('\n')
			l = string(buf) + strings.TrimRight(rest, "\r\n")
		}
		lines = append(lines, l)
		if strings.HasPrefix(l, "OK") || strings.HasPrefix(l, "NO") || strings.HasPrefix(l, "BYE") {
			return lines
		}
	}
}

func (c *sieveClient) do(line string) string {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.conn, line+"\r\n"); err != nil {
		c.t.Fatalf("write %q: %v", line, err)
	}
	r := c.response()
	return r[len(r)-1]
}

func (c *sieveClient) login(user, pass string) string {
	c.t.Helper()
	return c.do(`AUTHENTICATE "PLAIN" "` + base64.StdEncoding.EncodeToString([]byte("\x00"+user+"\x00"+pass)) + `"`)
}

// TestManageSieve: a mailbox made over the API logs in to ManageSieve
// with its password after STARTTLS; the script it activates is the one
// GET /users/{email}/sieve answers, and the one PUT there is what
// ManageSieve lists as active. Wrong passwords count in the login
// throttle IMAP uses.
func TestManageSieve(t *testing.T) {
	dir := t.TempDir()
	addrs, out, _ := startServer(t, dir)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	if code, body := call(t, "POST", api+"/domains/", key, `{"name":"example.com"}`); code != 201 {
		t.Fatalf("POST /domains/ = %d %s", code, body)
	}
	for _, u := range []string{"a", "b"} {
		if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"`+u+`@example.com","password":"password123"}`); code != 201 {
			t.Fatalf("POST /users/ = %d %s", code, body)
		}
	}
	pem, err := os.ReadFile(filepath.Join(dir, selfSignedCert))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)

	// Without TLS (allow_insecure_auth is off) no login.
	plain := dialSieve(t, addrs.ManageSieve, nil)
	if got := plain.login("a@example.com", "password123"); got != `NO (ENCRYPT-NEEDED) "use STARTTLS first"` {
		t.Errorf("login without TLS = %q", got)
	}

	c := dialSieve(t, addrs.ManageSieve, roots)
	if got := c.login("a@example.com", "password123"); got != `OK "Logged in"` {
		t.Fatalf("login = %q", got)
	}
	script := "require \"fileinto\";\r\nif header :contains \"subject\" \"[x]\" { fileinto \"X\"; }\r\n"
	for _, cmd := range []string{
		fmt.Sprintf("PUTSCRIPT \"filters\" {%d+}\r\n%s", len(script), script),
		`SETACTIVE "filters"`,
	} {
		if got := c.do(cmd); !strings.HasPrefix(got, "OK") {
			t.Fatalf("%s = %q", strings.SplitN(cmd, " ", 2)[0], got)
		}
	}
	if got := c.do("PUTSCRIPT \"bad\" \"filein \\\"x\\\";\""); got != `NO "line 1, column 1: unknown command \"filein\""` {
		t.Errorf("PUTSCRIPT of a bad script = %q", got)
	}
	if got := c.do(`HAVESPACE "other" 70000`); !strings.HasPrefix(got, "NO (QUOTA/MAXSIZE)") {
		t.Errorf("HAVESPACE over the limit = %q", got)
	}
	code, body := call(t, "GET", api+"/users/a@example.com/sieve", key, "")
	var got struct{ Script string }
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || got.Script != script {
		t.Errorf("GET sieve = %d %s, want the script activated over ManageSieve", code, body)
	}

	// The reverse: a script PUT over the API is the active one, under the
	// name the user gave it.
	if code, body := call(t, "PUT", api+"/users/a@example.com/sieve", key, `{"script":"discard;"}`); code != 200 {
		t.Fatalf("PUT sieve = %d %s", code, body)
	}
	c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c.conn, "LISTSCRIPTS\r\n")
	if got := strings.Join(c.response(), "|"); got != `"filters" ACTIVE|OK "Listscripts completed"` {
		t.Errorf("LISTSCRIPTS after the API's PUT = %s", got)
	}
	io.WriteString(c.conn, "GETSCRIPT \"filters\"\r\n")
	if got := c.response(); got[0] != "discard;" {
		t.Errorf("GETSCRIPT after the API's PUT = %q", got)
	}
	if code, _ := call(t, "DELETE", api+"/users/a@example.com/sieve", key, ""); code != 204 {
		t.Errorf("DELETE sieve = %d", code)
	}
	io.WriteString(c.conn, "LISTSCRIPTS\r\n")
	if got := strings.Join(c.response(), "|"); got != `OK "Listscripts completed"` {
		t.Errorf("LISTSCRIPTS after the API's DELETE = %s", got)
	}
	if got := c.do("LOGOUT"); !strings.HasPrefix(got, "OK") {
		t.Errorf("LOGOUT = %q", got)
	}

	// Wrong passwords: refused, three close the connection, and after the
	// budget of one account from one address (10) even the right
	// password is refused, over ManageSieve and over IMAP.
	guess := 0
	for guess < 10 {
		g := dialSieve(t, addrs.ManageSieve, roots)
		for i := 0; i < 3 && guess < 10; i++ {
			guess++
			want := `NO "authentication failed"`
			if i == 2 {
				want = `BYE "too many failed logins"`
			}
			if got := g.login("b@example.com", fmt.Sprintf("wrong%d", guess)); got != want {
				t.Fatalf("guess %d = %q, want %q", guess, got, want)
			}
		}
	}
	g := dialSieve(t, addrs.ManageSieve, roots)
	if got := g.login("b@example.com", "password123"); got != `NO (TRYLATER) "too many failed logins, try again later"` {
		t.Errorf("right password after 10 guesses = %q, want throttled", got)
	}
	ic, err := imapclient.DialStartTLS(addrs.IMAP, &imapclient.Options{TLSConfig: &tls.Config{ServerName: "mx.test", RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	if err := ic.Login("b@example.com", "password123").Wait(); err == nil || !strings.Contains(err.Error(), "Too many failed logins") {
		t.Errorf("IMAP login after 10 ManageSieve guesses = %v, want throttled", err)
	}

	// A suspended domain's mailboxes do not log in.
	if code, body := call(t, "POST", api+"/domains/example.com/suspend", key, ""); code != 200 {
		t.Fatalf("suspend = %d %s", code, body)
	}
	s := dialSieve(t, addrs.ManageSieve, roots)
	if got := s.login("a@example.com", "password123"); got != `NO "authentication failed"` {
		t.Errorf("login of a suspended domain's mailbox = %q", got)
	}
}
