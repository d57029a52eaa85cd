package singlenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// supervisorEnv marks the re-executed process that is to become the cluster's supervisor;
// its value is the state directory.
const supervisorEnv = "GUARDRAIL_CLUSTER_SUPERVISOR"

// RunSupervisorIfChild turns this process into the cluster's supervisor when Up started it
// so, and never returns then. Call it first thing in main (and TestMain) of every program
// that calls Up.
func RunSupervisorIfChild() {
	state := os.Getenv(supervisorEnv)
	if state == "" {
		return
	}
	root := os.Getenv("GUARDRAIL_REPO_ROOT")
	err := supervise(Layout{Root: root, State: state})
	if err != nil {
		log.Printf("supervisor: %v", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// hostSysctls are the host-wide (not per network namespace) sysctls the kubelet sets. Each
// is covered, inside the cluster's mount namespace, by a file holding the host's value, so
// the kubelet's writes land in the file and the host keeps its settings.
var hostSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

type proc struct {
	name string
	cmd  *exec.Cmd
}

type supervisor struct {
	l      Layout
	logger *log.Logger
	mu     sync.Mutex
	procs  map[int]*proc // by pid
	order  []*proc
	// stop is closed by the first SIGTERM or SIGINT.
	stopSignal chan struct{}
	stop       bool
}

// supervise runs as PID 1 of the cluster's namespaces: it prepares the mount and network
// namespace, starts the components in order, reaps every process that ends up its child
// (containerd's shims are re-parented to it) and, on SIGTERM, stops the components in
// reverse order. Its exit ends the pid namespace, which kills whatever is left in it.
func supervise(l Layout) error {
	logger := log.New(os.Stderr, "supervisor: ", log.LstdFlags|log.Lmicroseconds)
	s := &supervisor{l: l, logger: logger, procs: map[int]*proc{}, stopSignal: make(chan struct{})}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)

	if err := s.prepareMounts(); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	if err := s.prepareNetwork(); err != nil {
		return fmt.Errorf("network namespace: %w", err)
	}
	// From here on every child is reaped by reap (Wait4 on any pid): nothing may call
	// exec.Cmd.Wait any more, which is why the ip commands above ran first.
	go s.reap(sigs)
	// The host-side listener Up opened before the namespaces existed: connections to it come
	// from the host's loopback and are forwarded to the apiserver here.
	if ln, err := net.FileListener(os.NewFile(3, "host-listener")); err == nil {
		go forward(ln, net.JoinHostPort(NodeIP, strconv.Itoa(apiserverPort)))
	} else {
		return fmt.Errorf("host listener: %w", err)
	}
	if err := s.startAll(); err != nil {
		s.logger.Printf("start: %v", err)
		s.shutdown()
		return err
	}
	s.logger.Printf("all components started")
	_ = os.WriteFile(l.path("run", "supervisor.ready"), []byte("ok\n"), 0o644)
	<-s.stopSignal
	s.shutdown()
	return nil
}

func (s *supervisor) reap(sigs <-chan os.Signal) {
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			s.logger.Printf("%v: stopping", sig)
			select {
			case <-s.stopSignal:
			default:
				close(s.stopSignal)
			}
			continue
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			s.mu.Lock()
			p, ok := s.procs[pid]
			delete(s.procs, pid)
			stopping := s.stop
			s.mu.Unlock()
			if ok && !stopping {
				s.logger.Printf("%s (pid %d) exited unexpectedly: %v; see %s", p.name, pid, exitText(ws), filepath.Join(s.l.Logs(), p.name+".log"))
			}
		}
	}
}

func exitText(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}

func (s *supervisor) prepareMounts() error {
	l := s.l
	steps := []struct {
		src, target, fstype string
		flags               uintptr
		data                string
	}{
		{"", "/", "", unix.MS_REC | unix.MS_PRIVATE, ""},
		{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		// containerd's and runc's runtime state, pod network namespaces: gone with the namespace.
		{"tmpfs", "/run", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=755"},
		// The kubelet writes pod logs to /var/log/pods whatever it is told: into the state dir.
		{l.path("varlog"), "/var/log", "", unix.MS_BIND, ""},
	}
	for _, st := range steps {
		if err := unix.Mount(st.src, st.target, st.fstype, st.flags, st.data); err != nil {
			return fmt.Errorf("mount %s on %s: %w", st.src, st.target, err)
		}
	}
	// The components resolve names as the node does: its own name and CoreDNS, not the
	// host's resolver (unreachable from this network namespace).
	hosts := fmt.Sprintf("127.0.0.1 localhost\n%s %s\n", NodeIP, NodeName)
	for target, body := range map[string]string{"/etc/hosts": hosts, "/etc/resolv.conf": "nameserver " + ClusterDNS + "\n"} {
		file := l.path("conf", "node-"+filepath.Base(target))
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			return err
		}
		if err := unix.Mount(file, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("cover %s: %w", target, err)
		}
	}
	for _, name := range hostSysctls {
		target := "/proc/sys/" + name
		value, err := os.ReadFile(target)
		if err != nil {
			continue // not on this kernel
		}
		file := l.path("sysctl", strings.ReplaceAll(name, "/", "."))
		if err := os.WriteFile(file, value, 0o644); err != nil {
			return err
		}
		if err := unix.Mount(file, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("cover %s: %w", target, err)
		}
	}
	return unix.Sethostname([]byte(NodeName))
}

func (s *supervisor) prepareNetwork() error {
	cmds := [][]string{
		{"ip", "link", "set", "lo", "up"},
		// The node's address, on a veth pair whose both ends stay in this namespace (these
		// kernels have no dummy device): a link with carrier for the default route.
		{"ip", "link", "add", "node0", "type", "veth", "peer", "name", "node0-peer"},
		{"ip", "addr", "add", nodeCIDR, "dev", "node0"},
		{"ip", "link", "set", "node0-peer", "up"},
		{"ip", "link", "set", "node0", "up"},
		{"ip", "route", "add", "default", "dev", "node0"},
	}
	for _, c := range cmds {
		if out, err := exec.CommandContext(context.Background(), c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	// Per network namespace: routing between the bridge and Services, and bridged pod
	// traffic through iptables.
	for _, kv := range [][2]string{
		{"net/ipv4/ip_forward", "1"},
		{"net/bridge/bridge-nf-call-iptables", "1"},
	} {
		_ = os.WriteFile("/proc/sys/"+kv[0], []byte(kv[1]), 0o644)
	}
	return nil
}

func forward(ln net.Listener, to string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go func() {
			defer func() { _ = c.Close() }()
			d := net.Dialer{Timeout: 5 * time.Second}
			u, err := d.DialContext(context.Background(), "tcp", to)
			if err != nil {
				return
			}
			defer func() { _ = u.Close() }()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(u, c); _ = u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, u); _ = c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

// component is one process of the stack and how to tell it is serving.
type component struct {
	name  string
	args  []string
	ready func(context.Context) error
}

func (s *supervisor) components() []component {
	l := s.l
	pki, conf := l.pki, l.conf
	kubeconfigFlags := func(id string) []string {
		k := conf(id + ".kubeconfig")
		return []string{"--kubeconfig=" + k, "--authentication-kubeconfig=" + k, "--authorization-kubeconfig=" + k}
	}
	return []component{
		{name: "etcd", args: []string{l.Bin("etcd"), "--data-dir=" + l.path("etcd"),
			"--listen-client-urls=" + etcdClient, "--advertise-client-urls=" + etcdClient,
			"--listen-peer-urls=http://127.0.0.1:2380", "--log-level=warn", "--quota-backend-bytes=2147483648"},
			ready: httpReady("http://127.0.0.1:2379/health")},
		{name: "kube-apiserver", args: []string{l.Bin("kube-apiserver"),
			"--etcd-servers=" + etcdClient,
			"--bind-address=0.0.0.0", "--secure-port=" + strconv.Itoa(apiserverPort), "--advertise-address=" + NodeIP,
			"--service-cluster-ip-range=" + ServiceCIDR,
			"--client-ca-file=" + pki("ca.crt"), "--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
			"--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"), "--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
			"--service-account-issuer=https://kubernetes.default.svc." + ClusterDomain,
			"--service-account-key-file=" + pki("sa.pub"), "--service-account-signing-key-file=" + pki("sa.key"),
			"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
			"--allow-privileged=true", "--enable-aggregator-routing=true",
			"--kubelet-preferred-address-types=InternalIP,Hostname",
			"--profiling=false", "--v=1"},
			ready: s.apiReady},
		{name: "kube-controller-manager", args: append([]string{l.Bin("kube-controller-manager"),
			"--service-account-private-key-file=" + pki("sa.key"), "--root-ca-file=" + pki("ca.crt"),
			"--cluster-signing-cert-file=" + pki("ca.crt"), "--cluster-signing-key-file=" + pki("ca.key"),
			"--use-service-account-credentials=true", "--leader-elect=false",
			"--bind-address=127.0.0.1", "--profiling=false", "--v=1"}, kubeconfigFlags("controller-manager")...)},
		{name: "kube-scheduler", args: append([]string{l.Bin("kube-scheduler"),
			"--leader-elect=false", "--bind-address=127.0.0.1", "--profiling=false", "--v=1"}, kubeconfigFlags("scheduler")...)},
		{name: "containerd", args: []string{l.Bin("containerd"), "--config=" + conf("containerd.toml"), "--log-level=warn"},
			ready: socketReady(l.ContainerdSocket())},
		{name: "kubelet", args: []string{l.Bin("kubelet"), "--config=" + conf("kubelet.yaml"),
			"--kubeconfig=" + conf("kubelet.kubeconfig"), "--node-ip=" + NodeIP, "--hostname-override=" + NodeName,
			"--root-dir=" + l.path("kubelet"), "--cert-dir=" + l.path("kubelet", "pki"), "--v=1"}},
		{name: "kube-proxy", args: []string{l.Bin("kube-proxy"), "--config=" + conf("kube-proxy.yaml"), "--v=1"}},
		{name: "coredns", args: []string{l.Bin("coredns"), "-conf=" + conf("Corefile")},
			ready: httpReady("http://127.0.0.1:8080/health")},
	}
}

func (s *supervisor) startAll() error {
	for _, c := range s.components() {
		if err := s.start(c); err != nil {
			return err
		}
		if c.ready == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := c.ready(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("%s did not become ready: %w (see %s)", c.name, err, filepath.Join(s.l.Logs(), c.name+".log"))
		}
		s.logger.Printf("%s ready", c.name)
	}
	return nil
}

func (s *supervisor) start(c component) error {
	logf, err := os.OpenFile(filepath.Join(s.l.Logs(), c.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }()
	// Never cancelled: the supervisor stops its components itself (shutdown).
	cmd := exec.CommandContext(context.Background(), c.args[0], c.args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// containerd finds its shim, and kube-proxy iptables, by PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(s.l.Bin("containerd"))+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.Env = withoutEnv(cmd.Env, supervisorEnv)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.name, err)
	}
	p := &proc{name: c.name, cmd: cmd}
	s.procs[cmd.Process.Pid] = p
	s.order = append(s.order, p)
	s.logger.Printf("%s started (pid %d)", c.name, cmd.Process.Pid)
	return nil
}

// shutdown stops the components in reverse order of start, each with SIGTERM and up to
// five seconds, then SIGKILL.
func (s *supervisor) shutdown() {
	s.mu.Lock()
	s.stop = true
	order := append([]*proc(nil), s.order...)
	s.mu.Unlock()
	for i := len(order) - 1; i >= 0; i-- {
		p := order[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && s.alive(p.cmd.Process.Pid) {
			time.Sleep(20 * time.Millisecond)
		}
		if s.alive(p.cmd.Process.Pid) {
			s.logger.Printf("%s did not stop in 5s: killed", p.name)
			_ = p.cmd.Process.Kill()
		}
	}
	s.logger.Printf("stopped")
}

func (s *supervisor) alive(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.procs[pid]
	return ok
}

func withoutEnv(env []string, key string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
