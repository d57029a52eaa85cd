package singlenode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeConfigs writes every component's configuration into conf/. hostPort is the loopback
// port on the host the admin kubeconfig points at.
func (l Layout) writeConfigs(hostPort int) error {
	for _, d := range []string{"conf", "logs", "run", "etcd", "kubelet", "containerd", "cni/net.d", "cni/ipam", "varlog", "sysctl"} {
		if err := os.MkdirAll(l.path(d), 0o755); err != nil {
			return err
		}
	}
	inside := fmt.Sprintf("https://%s:%d", NodeIP, apiserverPort)
	for _, id := range identities {
		if err := l.writeKubeconfig(l.conf(id.file+".kubeconfig"), inside, id.file); err != nil {
			return err
		}
	}
	if err := l.writeKubeconfig(l.Kubeconfig(), fmt.Sprintf("https://127.0.0.1:%d", hostPort), "admin"); err != nil {
		return err
	}
	files := map[string]string{
		"kubelet.yaml":                       l.kubeletConfig(),
		"kube-proxy.yaml":                    l.kubeProxyConfig(),
		"containerd.toml":                    l.containerdConfig(),
		"Corefile":                           l.corefile(),
		"resolv.conf":                        "nameserver " + ClusterDNS + "\n",
		"../cni/net.d/10-guardrail.conflist": l.cniConfig(),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(l.path("conf"), name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (l Layout) writeKubeconfig(path, server, id string) error {
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: guardrail
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: guardrail
  context: {cluster: guardrail, user: %s}
current-context: guardrail
`, server, l.pki("ca.crt"), id, l.pki(id+".crt"), l.pki(id+".key"), id)
	return os.WriteFile(path, []byte(body), 0o600)
}

// kubeletConfig: cgroup v1 is all these machines have (failCgroupV1: false), the cgroupfs
// driver under this cluster's own cgroup root, eviction thresholds low enough for a shared
// development disk, and DNS served by CoreDNS on the node address.
func (l Layout) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s
containerRuntimeEndpoint: unix://%s
address: %s
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
clusterDomain: %s
clusterDNS: [%s]
resolvConf: %s
failSwapOn: false
protectKernelDefaults: false
serializeImagePulls: false
maxPods: 250
podCIDR: %s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
`, l.cgroupName(), l.ContainerdSocket(), NodeIP, l.pki("ca.crt"), ClusterDomain, ClusterDNS,
		l.conf("resolv.conf"), PodCIDR)
}

// kubeProxyConfig: iptables mode inside the cluster's network namespace. Every Service
// connection is masqueraded so that replies between pods on the one bridge come back
// through the NAT that translated them. Conntrack limits are host-wide sysctls: left alone.
func (l Layout) kubeProxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %s}
mode: iptables
hostnameOverride: %s
clusterCIDR: %s
iptables: {masqueradeAll: true}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
`, l.conf("kube-proxy.kubeconfig"), NodeName, PodCIDR)
}

// containerdConfig: config version 3. restrict_oom_score_adj because these VMs lack
// CAP_SYS_RESOURCE (the pause container's -998 would fail); every path under the state
// directory (/run is a tmpfs of the cluster's own mount namespace); the pause image is ours.
func (l Layout) containerdConfig() string {
	return fmt.Sprintf(`version = 3
root = %q
state = "/run/containerd"

[grpc]
  address = %q

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = %q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = %q
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = 'io.containerd.runc.v2'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = '/usr/sbin/runc'
      SystemdCgroup = false
`, l.path("containerd"), l.ContainerdSocket(), PauseImage, l.path("cni", "net.d"))
}

func (l Layout) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "guardrail",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, l.path("cni", "ipam"), PodCIDR)
}

// corefile: CoreDNS answers for Services and pods of the cluster; there is no upstream to
// forward other names to (the machine has no outside DNS).
func (l Layout) corefile() string {
	return strings.TrimLeft(fmt.Sprintf(`
.:53 {
    bind %s
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`, NodeIP, ClusterDomain, l.conf("coredns.kubeconfig")), "\n")
}
