package singlenode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrAlreadyUp is returned by Up when the state directory's cluster is running.
var ErrAlreadyUp = errors.New("the cluster is already up")

// Options tune Up.
type Options struct {
	// Port is the host loopback port the apiserver is forwarded to; 0 picks a free one.
	Port int
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// namespaces records what Up created, so Down and Leftovers know exactly what to look for.
type namespaces struct {
	Pid        int    `json:"pid"`
	PidNS      string `json:"pidNS"`
	NetNS      string `json:"netNS"`
	MntNS      string `json:"mntNS"`
	Port       int    `json:"port"`
	CgroupName string `json:"cgroupName"`
}

// Cluster is a running cluster.
type Cluster struct {
	Layout
	// Config is the admin's client configuration (through the host's loopback forward).
	Config *rest.Config
	// Client is a clientset for Config.
	Client kubernetes.Interface
	// Port is the host loopback port of the apiserver.
	Port int
}

// Preflight says why this machine cannot run the cluster, or nil when it can.
func Preflight(l Layout) error {
	if os.Geteuid() != 0 {
		return errors.New("the single-node cluster needs root (it creates namespaces, mounts and cgroups)")
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		return errors.New("no /sys/fs/cgroup")
	}
	var missing []string
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "coredns"} {
		if _, err := os.Stat(l.Bin(c)); err != nil {
			missing = append(missing, l.Bin(c))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not built: %s; run hack/cluster/build.sh (make cluster-up does)", strings.Join(missing, ", "))
	}
	for _, f := range []string{"/usr/sbin/runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback", "/usr/lib/cni/portmap"} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	for _, c := range []string{"iptables", "ip", "conntrack"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s; run hack/cluster/build.sh, which installs Debian's runc, containernetworking-plugins, iptables, iproute2 and conntrack", strings.Join(missing, ", "))
	}
	return nil
}

// Running reports the supervisor of l's cluster, if one is running.
func Running(l Layout) (namespaces, bool) {
	var ns namespaces
	b, err := os.ReadFile(l.nsFile())
	if err != nil || json.Unmarshal(b, &ns) != nil {
		return ns, false
	}
	return ns, alive(ns.Pid) && nsOf(ns.Pid, "pid") == ns.PidNS
}

// Up starts l's cluster and waits until the node is Ready and the base images are loaded.
// The supervisor outlives the calling process; Down stops it. The calling program must call
// RunSupervisorIfChild first thing in main.
func Up(ctx context.Context, l Layout, o Options) (*Cluster, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := Preflight(l); err != nil {
		return nil, err
	}
	if ns, ok := Running(l); ok {
		return nil, fmt.Errorf("%w (supervisor pid %d, kubeconfig %s)", ErrAlreadyUp, ns.Pid, l.Kubeconfig())
	}
	// What a previous run that was killed left behind.
	if err := l.removeCgroups(); err != nil {
		return nil, err
	}
	if err := l.writePKI(); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: o.Port})
	if err != nil {
		return nil, fmt.Errorf("host forward for the apiserver: %w", err)
	}
	defer func() { _ = ln.Close() }()
	port := ln.Addr().(*net.TCPAddr).Port
	if err := l.writeConfigs(port); err != nil {
		return nil, fmt.Errorf("configs: %w", err)
	}
	if err := l.makeCgroups(); err != nil {
		return nil, err
	}
	lnFile, err := ln.File()
	if err != nil {
		return nil, err
	}
	defer func() { _ = lnFile.Close() }()
	_ = os.Remove(l.path("run", "supervisor.ready"))
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(l.Logs(), "supervisor.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	// Not CommandContext: the supervisor outlives this call (and this process).
	cmd := exec.Command(exe) //nolint:noctx
	cmd.Env = append(os.Environ(), supervisorEnv+"="+l.State, "GUARDRAIL_REPO_ROOT="+l.Root)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, logFile, logFile
	cmd.ExtraFiles = []*os.File{lnFile}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:     true,
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the supervisor in new namespaces: %w", err)
	}
	pid := cmd.Process.Pid
	// Reap it when it ends while this process lives (a test); otherwise init adopts it.
	go func() { _ = cmd.Wait() }()
	ns := namespaces{Pid: pid, PidNS: nsOf(pid, "pid"), NetNS: nsOf(pid, "net"), MntNS: nsOf(pid, "mnt"), Port: port, CgroupName: l.cgroupName()}
	b, _ := json.Marshal(ns)
	if err := os.WriteFile(l.nsFile(), b, 0o644); err != nil {
		return nil, err
	}
	logf("cluster: supervisor pid %d; logs in %s", pid, l.Logs())
	if err := poll(ctx, func() error {
		if !alive(pid) {
			return errSupervisorDied
		}
		_, err := os.Stat(l.path("run", "supervisor.ready"))
		return err
	}); err != nil {
		return nil, l.failed(err)
	}
	logf("cluster: components started in %s", time.Since(start).Round(time.Millisecond))
	c, err := Attach(l)
	if err != nil {
		return nil, err
	}
	if err := c.bootstrap(ctx); err != nil {
		return nil, l.failed(err)
	}
	if err := c.LoadImages(ctx, BaseImages()...); err != nil {
		return nil, l.failed(err)
	}
	if err := c.waitNodeReady(ctx); err != nil {
		return nil, l.failed(err)
	}
	logf("cluster: node %s Ready in %s; kubeconfig %s", NodeName, time.Since(start).Round(time.Millisecond), l.Kubeconfig())
	return c, nil
}

var errSupervisorDied = errors.New("the supervisor exited")

// failed adds the end of the supervisor's log to err.
func (l Layout) failed(err error) error {
	return fmt.Errorf("%w\n--- %s (end) ---\n%s", err, filepath.Join(l.Logs(), "supervisor.log"), tail(filepath.Join(l.Logs(), "supervisor.log"), 20))
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Attach returns a client for l's running cluster.
func Attach(l Layout) (*Cluster, error) {
	ns, ok := Running(l)
	if !ok {
		return nil, fmt.Errorf("the cluster in %s is not running", l.State)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Layout: l, Config: cfg, Client: cs, Port: ns.Port}, nil
}

// bootstrap creates what the components need beyond the apiserver's built-in policy:
// CoreDNS's read access to Services, EndpointSlices, Pods and Namespaces.
func (c *Cluster) bootstrap(ctx context.Context) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:coredns"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:coredns"}}}
	return poll(ctx, func() error {
		if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

func (c *Cluster) waitNodeReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return poll(ctx, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("node %s: %w", NodeName, err)
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				// Pods need the default ServiceAccount of their namespace.
				_, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
				return err
			}
		}
		return fmt.Errorf("node %s is not Ready", NodeName)
	})
}

// Down stops l's cluster: the supervisor stops the components, its exit ends the
// namespaces (and every process, mount and network device in them), and the cgroup subtree
// is removed. Down of a cluster that is not running removes what a killed run left behind.
func Down(ctx context.Context, l Layout) error {
	ns, running := Running(l)
	if running {
		_ = syscall.Kill(ns.Pid, syscall.SIGTERM)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := poll(ctx, func() error {
			if alive(ns.Pid) {
				return fmt.Errorf("supervisor pid %d still running", ns.Pid)
			}
			return nil
		}); err != nil {
			_ = syscall.Kill(ns.Pid, syscall.SIGKILL)
		}
		// The kernel kills the rest of the pid namespace when its first process exits.
		_ = poll(ctx, func() error {
			if p := processesIn(ns); len(p) > 0 {
				return fmt.Errorf("processes left: %v", p)
			}
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := poll(ctx, l.removeCgroups); err != nil {
		return err
	}
	_ = os.Remove(l.nsFile())
	if left := Leftovers(l, ns); len(left) > 0 {
		return fmt.Errorf("after down: %s", strings.Join(left, "; "))
	}
	return nil
}

// Purge deletes a stopped cluster's data: everything in the state directory but the built
// components (bin/) and the command (cluster).
func Purge(l Layout) error {
	if _, running := Running(l); running {
		return errors.New("the cluster is running: bring it down first")
	}
	ents, err := os.ReadDir(l.State)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == "bin" || e.Name() == "cluster" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(l.State, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Leftovers lists what of the cluster recorded in ns is still on the host: processes in its
// namespaces, mounts under its state directory, its cgroups, and whether its network
// namespace (with its devices) still exists.
func Leftovers(l Layout, ns namespaces) []string {
	var out []string
	if ns.PidNS != "" {
		if p := processesIn(ns); len(p) > 0 {
			out = append(out, fmt.Sprintf("processes in the cluster's namespaces: %v", p))
		}
	}
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 4 && (strings.HasPrefix(fields[4], l.State+"/") || fields[4] == l.State) {
				out = append(out, "mount "+fields[4])
			}
			if ns.NetNS != "" && strings.Contains(sc.Text(), ns.NetNS) {
				out = append(out, "the cluster's network namespace is mounted at "+fields[4])
			}
		}
		_ = f.Close()
	}
	for _, d := range l.cgroupDirs() {
		if _, err := os.Stat(d); err == nil {
			out = append(out, "cgroup "+d)
		}
	}
	return out
}

// processesIn lists the pids of processes in any of the recorded namespaces.
func processesIn(ns namespaces) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		for kind, want := range map[string]string{"pid": ns.PidNS, "net": ns.NetNS, "mnt": ns.MntNS} {
			if want != "" && nsOf(pid, kind) == want {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func nsOf(pid int, kind string) string {
	s, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, kind))
	return s
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// cgroupDirs is the cluster's cgroup directory in every v1 hierarchy (or the v2 tree).
func (l Layout) cgroupDirs() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{filepath.Join("/sys/fs/cgroup", l.cgroupName())}
	}
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	var dirs []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		// Every hierarchy, the unified one of a hybrid setup included (runc creates the
		// container cgroups there too); the cpu,cpuacct symlinks are the same directories.
		if fi, err := os.Lstat(filepath.Join("/sys/fs/cgroup", e.Name())); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), l.cgroupName()))
	}
	return dirs
}

func (l Layout) makeCgroups() error {
	for _, d := range l.cgroupDirs() {
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
	}
	return nil
}

// removeCgroups removes the cluster's cgroup trees, deepest first. A cgroup with a process
// in it cannot be removed: the error says which.
func (l Layout) removeCgroups() error {
	for _, root := range l.cgroupDirs() {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				return fmt.Errorf("remove cgroup %s: %w", dirs[i], err)
			}
		}
	}
	return nil
}
