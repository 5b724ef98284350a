// Package pgtest starts real, throwaway PostgreSQL servers for tests.
//
// A Cluster is a fresh initdb in a private temporary directory, served by a
// postgres process this package starts and owns. It listens on a Unix socket
// in that directory (trust authentication, used by the helpers) and on
// 127.0.0.1 with a free port (password authentication by default, used by
// DSN). Stop shuts it down and removes the directory.
//
// PostgreSQL refuses to run as root. When the test runs as root (CI does),
// initdb and postgres run as an unprivileged OS user (default "postgres",
// created with useradd if missing) through the process credentials, the same
// thing `runuser -u postgres --` would do, minus the extra process.
//
// Tests normally use Shared (one cluster per test binary) with a TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		c := pgtest.Shared(t)
//		db := pgtest.NewDatabase(t, c, pgtest.Fixture(t, "fresh-activated.pg.sql"))
//		conn, err := pgx.Connect(t.Context(), c.DSN(db))
//		...
//	}
//
// Without the binaries, Shared and New skip the test, except when CI is set,
// where they fail it.
//
// Platforms: Linux (where CI runs, and where a test binary that dies takes
// its server with it through the parent-death signal) and the other Unix
// systems such as macOS (no parent-death signal: a test binary killed
// without Stop can leave its server running; the next Start removes its
// directory once it has gone). On Windows Start returns ErrUnsupported, and
// Shared and New skip the test whether or not CI is set: the package relies
// on Unix-domain sockets, process groups, signals for PostgreSQL's shutdown
// modes and setuid credentials, none of which exist there.
package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Defaults for Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultHostAuth     = "scram-sha-256"
	DefaultOSUser       = "postgres"
	// Superuser is the bootstrap superuser initdb creates in every cluster.
	Superuser = "postgres"
)

const (
	ownerFile      = "pgtest.owner" // "<pid> <pid namespace>" of the process that made the dir
	logFileName    = "postgres.log"
	portAttempts   = 5
	fastStopWait   = 15 * time.Second
	immediateWait  = 5 * time.Second
	logTailLines   = 30
	connectTimeout = 5 * time.Second
)

// Options configures Start. The zero value is ready to use.
type Options struct {
	// BinDir is a directory with initdb, pg_ctl and postgres. Empty: FindBinaries.
	BinDir string
	// StartTimeout bounds initdb and, separately, the wait for the server to
	// accept connections. Default DefaultStartTimeout.
	StartTimeout time.Duration
	// HostAuth is the pg_hba method for TCP connections: "scram-sha-256"
	// (default; DSN carries the superuser's random password) or "trust".
	// Unix-socket connections always use trust.
	HostAuth string
	// Settings are extra postgresql.conf settings; they override the
	// defaults (fsync=off, timezone=UTC, ... see defaultSettings).
	Settings map[string]string
	// OSUser runs initdb and postgres when the test runs as root.
	// Default DefaultOSUser.
	OSUser string
	// BaseDir is where the cluster directory is created. Default: the
	// system temp dir, or /tmp when that is not usable (socket path too long,
	// or not reachable by OSUser).
	BaseDir string
	// Logf, if set, receives progress lines (e.g. t.Logf).
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.HostAuth == "" {
		o.HostAuth = DefaultHostAuth
	}
	if o.OSUser == "" {
		o.OSUser = DefaultOSUser
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// defaultSettings trade durability for speed; nothing here survives the test.
func defaultSettings(socketDir string) map[string]string {
	return map[string]string{
		"listen_addresses":        "127.0.0.1",
		"unix_socket_directories": socketDir,
		"fsync":                   "off",
		"synchronous_commit":      "off",
		"full_page_writes":        "off",
		"wal_level":               "minimal",
		"max_wal_senders":         "0",
		"autovacuum":              "off",
		"shared_buffers":          "32MB",
		"timezone":                "UTC",
		"log_timezone":            "UTC",
		"lc_messages":             "C",
		"password_encryption":     "scram-sha-256",
		"logging_collector":       "off",
	}
}

// Cluster is a running throwaway PostgreSQL server. Its methods are safe for
// concurrent use.
type Cluster struct {
	bins     *Binaries
	dir      string // socket dir too
	dataDir  string
	logPath  string
	port     int
	password string
	proc     *proc
	logf     func(string, ...any)

	stopOnce sync.Once
	stopErr  error

	tplMu     sync.Mutex
	templates map[templateKey]*dumpTemplate // see NewDatabase
}

// Start initialises and starts a new cluster. Call Stop when done.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if opts.HostAuth != "scram-sha-256" && opts.HostAuth != "trust" && opts.HostAuth != "md5" {
		return nil, fmt.Errorf("pgtest: HostAuth %q: want scram-sha-256, md5 or trust", opts.HostAuth)
	}
	var bins *Binaries
	var err error
	if opts.BinDir != "" {
		bins, err = findBinaries(opts.BinDir, "")
	} else {
		bins, err = FindBinaries()
	}
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential(opts.OSUser)
	if err != nil {
		return nil, err
	}

	parent := opts.BaseDir
	if parent == "" {
		parent = defaultBaseDir(cred != nil)
	}
	sweepStale(parent)
	dir, err := os.MkdirTemp(parent, "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c := &Cluster{
		bins:    bins,
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, logFileName),
		logf:    opts.Logf,
	}
	ok := false
	defer func() {
		if !ok {
			c.kill()
			_ = os.RemoveAll(dir)
		}
	}()
	if sock := filepath.Join(dir, ".s.PGSQL.65535"); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("pgtest: socket path %s is longer than %d bytes; set Options.BaseDir or TMPDIR to a shorter directory", sock, maxSocketPath)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(ownerID()), 0o644); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: give %s to %s: %w", dir, opts.OSUser, err)
		}
	}

	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c.password = hex.EncodeToString(pw)

	t0 := time.Now()
	if err := c.initdb(ctx, cred, opts); err != nil {
		return nil, err
	}
	c.logf("pgtest: initdb (%s) took %s", bins.Initdb, time.Since(t0).Round(time.Millisecond))
	if err := c.writeConfig(opts.Settings); err != nil {
		return nil, err
	}

	t1 := time.Now()
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("pgtest: pick a port: %w", err)
		}
		err = c.boot(ctx, port, cred, opts.StartTimeout)
		if err == nil {
			c.port = port
			break
		}
		if errors.Is(err, errPortInUse) && attempt < portAttempts {
			c.logf("pgtest: port %d taken, retrying", port)
			continue
		}
		return nil, err
	}
	c.logf("pgtest: server pid %d ready on 127.0.0.1:%d and %s in %s",
		c.PID(), c.port, c.dir, time.Since(t1).Round(time.Millisecond))
	ok = true
	return c, nil
}

// childEnv is the environment for PostgreSQL programs: libpq's PG* variables
// from the developer's shell (PGHOST, PGDATA, PGOPTIONS, PGTZ, ...) would
// redirect or alter them, and locale variables would change messages.
func childEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "LANGUAGE" ||
			(home != "" && k == "HOME") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "LC_ALL=C")
	if home != "" {
		env = append(env, "HOME="+home)
	}
	return env
}

func (c *Cluster) initdb(ctx context.Context, cred *credential, opts Options) error {
	pwfile := filepath.Join(c.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.password+"\n"), 0o600); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer os.Remove(pwfile)
	if cred != nil {
		if err := os.Chown(pwfile, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bins.Initdb,
		"-D", c.dataDir,
		"-U", Superuser,
		"--pwfile="+pwfile,
		"--auth-local=trust",
		"--auth-host="+opts.HostAuth,
		"--encoding=UTF8",
		"--locale=C",
		"--no-sync",
	)
	cmd.Dir = c.dir
	cmd.Env = childEnv(c.dir)
	cmd.SysProcAttr = sysProcAttr(cred, 0)
	// initdb runs postgres in bootstrap mode as children: cancel the group.
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("pgtest: initdb did not finish within %s; output tail:\n%s",
				opts.StartTimeout, tail(out, logTailLines))
		}
		return fmt.Errorf("pgtest: initdb: %w; output tail:\n%s", err, tail(out, logTailLines))
	}
	return nil
}

func (c *Cluster) writeConfig(extra map[string]string) error {
	settings := defaultSettings(c.dir)
	for k, v := range extra {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n# pgtest: throwaway test cluster, durability off\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, quoteLiteral(settings[k]))
	}
	// Appending keeps the file's owner (the OS user) and mode.
	f, err := os.OpenFile(filepath.Join(c.dataDir, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("pgtest: write postgresql.conf: %w", err)
	}
	return f.Close()
}

var errPortInUse = errors.New("port in use")

// boot starts postgres on port and waits until it accepts connections on
// the socket.
func (c *Cluster) boot(ctx context.Context, port int, cred *credential, timeout time.Duration) error {
	logf, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close() // the child has its own copy of the descriptor
	cmd := exec.Command(c.bins.Postgres, "-D", c.dataDir, "-p", strconv.Itoa(port))
	cmd.Dir = c.dir
	cmd.Env = childEnv(c.dir)
	cmd.Stdout = logf
	cmd.Stderr = logf
	// SIGQUIT is PostgreSQL's immediate shutdown: if the test binary dies
	// without Stop, the server and its backends go with it.
	cmd.SysProcAttr = sysProcAttr(cred, syscall.SIGQUIT)
	p, err := startLocked(cmd)
	if err != nil {
		return fmt.Errorf("pgtest: start %s: %w", c.bins.Postgres, err)
	}
	c.proc = p

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dsn := c.socketDSN("postgres", port, 2*time.Second)
	var lastErr error
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		conn, err := pgconn.Connect(ctx, dsn)
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		lastErr = err
		select {
		case <-p.done:
			logTail := c.LogTail(logTailLines)
			c.proc = nil
			if strings.Contains(logTail, "could not bind") || strings.Contains(logTail, "Address already in use") {
				return errPortInUse
			}
			return fmt.Errorf("pgtest: postgres exited during startup (%v); log %s tail:\n%s",
				p.err, c.logPath, logTail)
		case <-ctx.Done():
			c.kill()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("pgtest: server did not accept connections within %s (last attempt: %v); log %s tail:\n%s",
					timeout, lastErr, c.logPath, c.LogTail(logTailLines))
			}
			return fmt.Errorf("pgtest: start cancelled: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}

// proc is a child process whose parent-death signal is armed on a thread
// that stays alive (locked to the waiting goroutine) until the child exits.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait; read after done is closed
}

func startLocked(cmd *exec.Cmd) (*proc, error) {
	p := &proc{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the *thread* that forked exits, and Go may
		// retire idle threads; locking pins it to this goroutine, which
		// lives until the child is reaped.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// stop shuts the server down: fast shutdown (SIGINT), then immediate
// (SIGQUIT), then SIGKILL to the whole process group.
func (p *proc) stop() error {
	pid := p.cmd.Process.Pid
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, fastStopWait}, {syscall.SIGQUIT, immediateWait}, {syscall.SIGKILL, immediateWait}}
	var err error
	for _, s := range steps {
		if s.sig == syscall.SIGKILL {
			_ = killGroup(pid) // backends too
		} else {
			_ = signalProcess(pid, s.sig)
		}
		select {
		case <-p.done:
			// Backends exit on their own when the postmaster goes; make sure.
			_ = killGroup(pid)
			return err
		case <-time.After(s.wait):
			err = fmt.Errorf("pgtest: postgres pid %d ignored %v for %s", pid, s.sig, s.wait)
		}
	}
	return err
}

// kill stops the server without waiting for a clean shutdown.
func (c *Cluster) kill() {
	if c.proc != nil {
		_ = killGroup(c.proc.cmd.Process.Pid)
		select {
		case <-c.proc.done:
		case <-time.After(immediateWait):
		}
		c.proc = nil
	}
}

// Stop shuts the server down (fast shutdown) and removes its directory.
// It is idempotent; later calls return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		if c.proc != nil {
			if err := c.proc.stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("pgtest: %w", err))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// PID is the postmaster's process id (0 once stopped).
func (c *Cluster) PID() int {
	if c.proc == nil {
		return 0
	}
	select {
	case <-c.proc.done:
		return 0
	default:
		return c.proc.cmd.Process.Pid
	}
}

// Port is the TCP port on 127.0.0.1 (the Unix socket uses the same number).
func (c *Cluster) Port() int { return c.port }

// Dir is the cluster's private directory: data/, postgres.log and the socket.
func (c *Cluster) Dir() string { return c.dir }

// SocketDir is the Unix-socket directory (libpq's host= for a socket).
func (c *Cluster) SocketDir() string { return c.dir }

// LogPath is the server log file.
func (c *Cluster) LogPath() string { return c.logPath }

// LogTail returns the last n lines of the server log.
func (c *Cluster) LogTail(n int) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return tail(b, n)
}

// DSN is a postgres:// URL for the superuser over TCP on 127.0.0.1, with
// its password (a random one per cluster).
func (c *Cluster) DSN(db string) string {
	return c.RoleDSN(Superuser, c.password, db)
}

// RoleDSN is a postgres:// URL for user over TCP on 127.0.0.1.
func (c *Cluster) RoleDSN(user, password, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(user, password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	if password == "" {
		u.User = url.User(user)
	}
	return u.String()
}

// SocketDSN is a keyword/value connection string for the superuser over the
// Unix socket (trust authentication, no password).
func (c *Cluster) SocketDSN(db string) string { return c.socketDSN(db, c.port, connectTimeout) }

func (c *Cluster) socketDSN(db string, port int, timeout time.Duration) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable connect_timeout=%d",
		kvQuote(c.dir), port, Superuser, kvQuote(db), max(1, int(timeout/time.Second)))
}

// kvQuote quotes a libpq keyword/value connection-string value.
func kvQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// Connect opens a pgx connection as the superuser over TCP.
func (c *Cluster) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, c.DSN(db))
	if err != nil {
		return nil, fmt.Errorf("pgtest: connect to %q: %w", db, err)
	}
	return conn, nil
}

// Exec runs sql (one or more statements, simple protocol) in database db as
// the superuser over the Unix socket. The SQL is not repeated in errors, as
// it may hold a password.
func (c *Cluster) Exec(ctx context.Context, db, sql string) error {
	conn, err := pgconn.Connect(ctx, c.SocketDSN(db))
	if err != nil {
		return fmt.Errorf("pgtest: exec in %q: %w", db, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("pgtest: exec in %q: %w", db, err)
	}
	return nil
}

// CreateDatabase creates an empty database owned by the superuser.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("pgtest: create database %q: %w", name, err)
	}
	return nil
}

// CreateRole creates a least-privilege login role: no superuser, createdb,
// createrole or replication. With a non-empty password it can log in over
// TCP (DSN: RoleDSN); with "" only over the socket. For each database in
// readDBs it gets CONNECT, USAGE on schema public and SELECT on every table
// there now and created later by the superuser; nothing else. Grant more
// with Exec.
func (c *Cluster) CreateRole(ctx context.Context, name, password string, readDBs ...string) error {
	if strings.ContainsRune(password, 0) {
		return fmt.Errorf("pgtest: create role %q: password contains NUL", name)
	}
	role := pgx.Identifier{name}.Sanitize()
	stmt := "CREATE ROLE " + role + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
	if password != "" {
		stmt += " PASSWORD " + quoteLiteral(password)
	}
	if err := c.Exec(ctx, "postgres", stmt); err != nil {
		return fmt.Errorf("pgtest: create role %q: %w", name, err)
	}
	for _, db := range readDBs {
		grants := "GRANT CONNECT ON DATABASE " + pgx.Identifier{db}.Sanitize() + " TO " + role + ";\n" +
			"GRANT USAGE ON SCHEMA public TO " + role + ";\n" +
			"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + role + ";\n" +
			"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO " + role + ";"
		if err := c.Exec(ctx, db, grants); err != nil {
			return fmt.Errorf("pgtest: grant %q read access to %q: %w", name, db, err)
		}
	}
	return nil
}

// quoteLiteral quotes s as an SQL / postgresql.conf string literal
// (standard_conforming_strings is on, so only quotes need doubling).
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func tail(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before postgres binds it; Start retries in that case.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// defaultBaseDir is os.TempDir unless its socket paths would be too long or,
// as root, the unprivileged server user could not reach it.
func defaultBaseDir(asRoot bool) string {
	d := os.TempDir()
	if len(d) > 60 || (asRoot && !othersCanTraverse(d)) {
		return "/tmp"
	}
	return d
}

func othersCanTraverse(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// ownerID identifies this process across pid namespaces sharing /tmp.
func ownerID() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return fmt.Sprintf("%d %s\n", os.Getpid(), ns)
}

// sweepStale removes cluster directories left behind by test binaries that
// died without Stop (their servers were stopped by the parent-death signal,
// but nobody removed the directory). A directory is removed only if it has
// our owner file, its owner is in our pid namespace and gone, and no
// postmaster is running in it.
func sweepStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "pgtest-*"))
	myNS, _ := os.Readlink("/proc/self/ns/pid")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		ns := ""
		if len(f) > 1 {
			ns = f[1]
		}
		if err != nil || ns != myNS || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if pm := postmasterPID(filepath.Join(d, "data")); pm != 0 && processAlive(pm) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// postmasterPID reads the first line of dataDir/postmaster.pid (0 if none).
func postmasterPID(dataDir string) int {
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(s.Text()))
	return pid
}
