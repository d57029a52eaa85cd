package incluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// leaderPod is the manager pod holding the leader election Lease.
func (u user) leaderPod() string {
	u.t.Helper()
	var pod string
	u.until(time.Minute, func() bool {
		out, err := u.run("kubectl", "-n", systemNS, "get", "lease", leaderLease, "-o", "jsonpath={.spec.holderIdentity}")
		pod, _, _ = strings.Cut(strings.TrimSpace(out), "_")
		if err != nil || pod == "" {
			return false
		}
		_, err = u.run("kubectl", "-n", systemNS, "get", "pod", pod)
		return err == nil
	})
	return pod
}

// leaderLease is the manager's leader election Lease (cmd/manager's leaderLockID).
const leaderLease = "guardrail-operator.guardrail.dev"

// managerPods are the running manager pods, not being deleted.
func (u user) managerPods() []string {
	u.t.Helper()
	out := u.kubectl("-n", systemNS, "get", "pod", "-l", managerSelector,
		"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var pods []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 1 {
			pods = append(pods, f[0])
		}
	}
	return pods
}

// sigkillManager kills the manager process of pod with SIGKILL, as the kernel's OOM killer
// or a node's crash would: no shutdown hook runs. The node is this machine; the process is
// found by its container's id in its cgroup.
func (u user) sigkillManager(pod string) {
	u.t.Helper()
	id := u.kubectl("-n", systemNS, "get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	_, id, _ = strings.Cut(strings.TrimSpace(id), "://")
	if len(id) < 12 {
		u.t.Fatalf("pod %s: no container id (%q)", pod, id)
	}
	cgroups, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	killed := 0
	for _, f := range cgroups {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), id) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	if killed == 0 {
		u.t.Fatalf("pod %s: no process of container %s found to kill", pod, id[:12])
	}
}

// appTraffic sends the redact drill's request from the demo app through its guard every
// 0.3s until stop() is called, and returns stop, which returns the answers.
func (u user) appTraffic(content string) (stop func() []string) {
	u.t.Helper()
	done := make(chan string, 1)
	go func() {
		out, err := u.run("kubectl", "-n", "demo", "exec", "deploy/chat", "-c", "app", "--", "sh", "-c",
			fmt.Sprintf(`rm -f /tmp/stop; while [ ! -e /tmp/stop ]; do %s; echo; sleep 0.3; done`, wgetChat(chatBody(content, false))))
		if err != nil {
			out = "ERROR " + err.Error() + "\n" + out
		}
		done <- out
	}()
	return func() []string {
		u.kubectl("-n", "demo", "exec", "deploy/chat", "-c", "app", "--", "touch", "/tmp/stop")
		out := <-done
		if strings.HasPrefix(out, "ERROR ") {
			u.t.Fatalf("traffic from the app: %s", out)
		}
		// kubectl's own warnings (a websocket's, on stderr) are not answers.
		var answers []string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "{") {
				answers = append(answers, line)
			} else if strings.TrimSpace(line) != "" {
				u.t.Logf("not an answer: %s", line)
			}
		}
		return answers
	}
}

// exactlyFailover is the failover drill: under steady traffic, the leader manager pod is
// deleted (SIGTERM, the next replica taking the Lease) and the other replica's process is
// killed with SIGKILL, three times each; every request must be counted exactly once.
func (u user) exactlyFailover() {
	u.t.Helper()
	// Earlier traffic may still be on its way into status: start from a settled count
	// (unchanged over more than a decision interval).
	before := u.redacted()
	for settled := time.Now().Add(2 * time.Minute); time.Now().Before(settled); {
		time.Sleep(15 * time.Second)
		now := u.redacted()
		if now == before {
			break
		}
		before = now
	}
	stop := u.appTraffic("failover: write to fail.over@example.org")
	for round := 1; round <= 3; round++ {
		time.Sleep(3 * time.Second)
		leader := u.leaderPod()
		u.kubectl("-n", systemNS, "delete", "pod", leader, "--wait=false")
		time.Sleep(3 * time.Second)
		for _, pod := range u.managerPods() {
			if pod != leader {
				u.sigkillManager(pod)
				u.t.Logf("round %d: deleted the leader %s, SIGKILLed %s", round, leader, pod)
				break
			}
		}
		u.kubectl("-n", systemNS, "rollout", "status", "deploy/"+release, "--timeout=3m")
		u.eventually(3*time.Minute, func(s string) bool { return s == "2" }, "-n", systemNS, "get", "deploy", release,
			"-o", "jsonpath={.status.readyReplicas}")
	}
	time.Sleep(3 * time.Second)
	answers := stop()
	for _, a := range answers {
		if strings.Contains(a, "fail.over") || !strings.Contains(a, "[REDACTED:email]") {
			u.t.Fatalf("an answer during the failovers: %s", a)
		}
	}
	want := before + len(answers)
	// A killed replica's owed counts are taken over once its heartbeat expired (30s at the
	// chart's 10s interval).
	deadline := time.Now().Add(3 * time.Minute)
	for u.redacted() < want && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	time.Sleep(45 * time.Second) // nothing arrives twice late
	got := u.redacted()
	u.t.Logf("%d requests through 3 leader deletions and 3 SIGKILLs: redacted went from %d to %d", len(answers), before, got)
	if got != want {
		u.t.Errorf("redacted %d, want exactly %d (%+d)", got, want, got-want)
	}
}
