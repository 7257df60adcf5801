package dbtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Net makes the links of this machine's loopback fail, for the partition suite (docs/faults.md,
// "Partitions"). Each party is told apart on the wire: a Redis node by a loopback address of its own
// (StartSplittableCluster), a service process by a cgroup of its own (Group, Command), whose sockets
// iptables' cgroup match sees. A cut is a pair of iptables DROP rules; a lossy link drops a share of
// the packets at random (the statistic match); a slow link sends one party's connections to an address
// through a Proxy that delays them (a DNAT rule, in place before the party connects). Every rule
// carries the Net's comment and every cgroup sits under the Net's own, so that the test's cleanup, and
// the next Net after a run that was killed, remove all of them; nothing leaves the machine.
type Net struct {
	t      testing.TB
	tag    string // the comment on each rule: netTag-<pid>
	root   string // the Net's cgroup directory
	path   string // the same, relative to the cgroup2 mount (iptables' --path)
	mu     sync.Mutex
	groups map[string]bool
}

const netTag = "ticketrush-net"

// NewNet checks that this process can change the firewall (root, iptables, a cgroup2 mount), removes
// what a Net of an earlier run left, and removes its own rules and cgroups at the end of the test.
func NewNet(t testing.TB) *Net {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the partition suite changes the firewall: run it as root (CI does)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Fatal("iptables is not installed: run scripts/install.sh iptables (make test does)")
	}
	mount := cgroup2Mount(t)
	sweepNet(t, mount)
	n := &Net{t: t, tag: fmt.Sprintf("%s-%d", netTag, os.Getpid()), groups: map[string]bool{}}
	n.path = fmt.Sprintf("%s-%d", netTag, os.Getpid())
	n.root = filepath.Join(mount, n.path)
	if err := os.MkdirAll(n.root, 0o755); err != nil {
		t.Fatalf("make cgroup %s: %v", n.root, err)
	}
	t.Cleanup(n.Close)
	return n
}

// cgroup2Mount is where the cgroup2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified
// on a hybrid layout).
func cgroup2Mount(t testing.TB) string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1]
		}
	}
	t.Fatal("no cgroup2 hierarchy is mounted: the partition suite tells processes apart by cgroup")
	return ""
}

// sweepNet removes the rules and the empty cgroups that any Net left (a run killed before its cleanup).
func sweepNet(t testing.TB, mount string) {
	deleteRules(t, netTag)
	dirs, _ := filepath.Glob(filepath.Join(mount, netTag+"-*"))
	for _, d := range dirs {
		subs, _ := filepath.Glob(filepath.Join(d, "*", "cgroup.procs"))
		for _, s := range subs {
			_ = os.Remove(filepath.Dir(s))
		}
		_ = os.Remove(d)
	}
}

// iptables runs iptables with args, failing the test on an error.
func iptables(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// deleteRules deletes every rule of the filter and nat tables' OUTPUT chains whose comment begins with
// prefix.
func deleteRules(t testing.TB, prefix string) {
	for _, table := range []string{"filter", "nat"} {
		out, err := exec.Command("iptables", "-w", "-t", table, "-S", "OUTPUT").Output()
		if err != nil {
			t.Fatalf("iptables -t %s -S OUTPUT: %v", table, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 || fields[0] != "-A" || !strings.Contains(line, "--comment "+prefix) &&
				!strings.Contains(line, `--comment "`+prefix) {
				continue
			}
			fields[0] = "-D"
			for i, f := range fields {
				fields[i] = strings.Trim(f, `"`)
			}
			iptables(t, append([]string{"-t", table}, fields...)...)
		}
	}
}

// Close removes the Net's rules and cgroups (the processes in them have exited: a test's cleanup runs
// in reverse, and the processes were started after the Net).
func (n *Net) Close() {
	deleteRules(n.t, n.tag)
	n.mu.Lock()
	defer n.mu.Unlock()
	for g := range n.groups {
		_ = os.Remove(filepath.Join(n.root, g))
	}
	_ = os.Remove(n.root)
}

// Group makes a cgroup for one party (an api process, say) and returns its name.
func (n *Net) Group(name string) string {
	n.t.Helper()
	if err := os.MkdirAll(filepath.Join(n.root, name), 0o755); err != nil {
		n.t.Fatalf("make cgroup %s: %v", name, err)
	}
	n.mu.Lock()
	n.groups[name] = true
	n.mu.Unlock()
	return name
}

// Command is exec.Command(name, args...) started inside group: a shell moves itself into the cgroup
// and then execs the program, so that every socket the program opens is the group's.
func (n *Net) Command(group, name string, args ...string) *exec.Cmd {
	procs := filepath.Join(n.root, group, "cgroup.procs")
	return exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, procs, name}, args...)...)
}

// Link is one direction of traffic a rule matches: from a cgroup or a source address, to an address
// (and port, 0 for any).
type Link struct {
	FromGroup string // a Group's name, or ""
	From      string // a source address, or ""
	To        string // a destination address
	Port      int
}

func (n *Net) match(l Link) []string {
	var m []string
	if l.FromGroup != "" {
		m = append(m, "-m", "cgroup", "--path", n.path+"/"+l.FromGroup)
	}
	if l.From != "" {
		m = append(m, "-s", l.From)
	}
	m = append(m, "-d", l.To, "-p", "tcp")
	if l.Port != 0 {
		m = append(m, "--dport", strconv.Itoa(l.Port))
	}
	return append(m, "-m", "comment", "--comment", n.tag)
}

// Fault is a set of rules in place; Heal removes them.
type Fault struct {
	n     *Net
	rules [][]string
	once  sync.Once
}

// Heal removes the fault's rules (once; later calls do nothing).
func (f *Fault) Heal() {
	f.once.Do(func() {
		for _, r := range f.rules {
			r = append([]string(nil), r...)
			r[2] = "-D"
			iptables(f.n.t, r...)
		}
	})
}

func (n *Net) add(rules [][]string) *Fault {
	n.t.Helper()
	f := &Fault{n: n}
	for _, r := range rules {
		iptables(n.t, r...)
		f.rules = append(f.rules, r)
	}
	return f
}

// Cut drops every packet of the links: their connections hang and new ones are not answered, as on a
// network that lost the route (no reset, no refusal).
func (n *Net) Cut(links ...Link) *Fault {
	n.t.Helper()
	var rules [][]string
	for _, l := range links {
		rules = append(rules, append([]string{"-t", "filter", "-I", "OUTPUT"}, append(n.match(l), "-j", "DROP")...))
	}
	return n.add(rules)
}

// Lossy drops each packet of the links with probability p.
func (n *Net) Lossy(p float64, links ...Link) *Fault {
	n.t.Helper()
	var rules [][]string
	for _, l := range links {
		m := append(n.match(l), "-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(p, 'f', 4, 64))
		rules = append(rules, append([]string{"-t", "filter", "-I", "OUTPUT"}, append(m, "-j", "DROP")...))
	}
	return n.add(rules)
}

// Redirect sends the new connections of link (a group's, to an address and port) to to (host:port),
// for as long as the test runs: a Proxy there puts a slow link in between (Proxy.Slow).
func (n *Net) Redirect(l Link, to string) {
	n.t.Helper()
	n.add([][]string{append([]string{"-t", "nat", "-A", "OUTPUT"}, append(n.match(l), "-j", "DNAT", "--to-destination", to)...)})
}
