package certs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// File names in the certificate directory and keys of the Secret (the kubernetes.io/tls
// convention, plus the CA certificate that clients trust).
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// Options say which certificate to keep and where.
type Options struct {
	// Namespace and SecretName locate the Secret holding the CA and serving certificate.
	// The Secret must exist (config/ ships it empty); the rotator fills it.
	Namespace, SecretName string
	// CertDir receives tls.crt, tls.key and ca.crt, where the webhook server and the
	// control-plane server read them.
	CertDir string
	// DNSNames of the serving certificate; the first is its common name.
	DNSNames []string
	// MutatingWebhooks are the webhook configurations whose caBundle is kept current.
	MutatingWebhooks []string
	// ServerCertDuration, CACertDuration, LookaheadInterval and RotationCheckFrequency
	// tune rotation; zero takes the rotator's defaults (1 year, 10 years, 90 days, 12 hours).
	ServerCertDuration, CACertDuration, LookaheadInterval, RotationCheckFrequency time.Duration
}

// Setup adds the rotator and the Secret-to-directory mirror to mgr. The returned checker
// fails until the certificate is in CertDir and the CA is in the webhook configurations:
// add it to the manager's readyz so that no traffic reaches a replica before it can serve.
func Setup(mgr ctrl.Manager, o Options) (healthz.Checker, error) {
	if len(o.DNSNames) == 0 {
		return nil, errors.New("certs: no DNS names")
	}
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	webhooks := make([]rotator.WebhookInfo, 0, len(o.MutatingWebhooks))
	for _, name := range o.MutatingWebhooks {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: name, Type: rotator.Mutating})
	}
	ready := make(chan struct{})
	if err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:              types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName},
		CertDir:                o.CertDir,
		CAName:                 "guardrail-operator-ca",
		CAOrganization:         "guardrail.dev",
		DNSName:                o.DNSNames[0],
		ExtraDNSNames:          o.DNSNames[1:],
		IsReady:                ready,
		Webhooks:               webhooks,
		FieldOwner:             "guardrail-operator",
		ServerCertDuration:     o.ServerCertDuration,
		CaCertDuration:         o.CACertDuration,
		LookaheadInterval:      o.LookaheadInterval,
		RotationCheckFrequency: o.RotationCheckFrequency,
		// Every replica serves the webhook, so every replica keeps the certificate; the
		// Secret's resourceVersion settles concurrent writers.
		RequireLeaderElection: false,
		ControllerName:        "cert-rotator",
	}); err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	secrets, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {
			Namespaces: map[string]cache.Config{o.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", o.SecretName),
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	// Wrapped so the manager starts it on every replica (with the caches), not only on the
	// elected leader: a bare cache.Cache lands in the leader-election group, and a replica
	// that is not the leader would never get its serving certificate, nor become ready.
	if err := mgr.Add(replicaCache{secrets}); err != nil {
		return nil, err
	}
	if err := mgr.Add(&mirror{cache: secrets, dir: o.CertDir, name: o.SecretName}); err != nil {
		return nil, err
	}
	return func(*http.Request) error {
		select {
		case <-ready:
			return nil
		default:
			return errors.New("the serving certificate is not in place yet")
		}
	}, nil
}

// replicaCache is a cache the manager starts on every replica: it has GetCache, so the
// manager puts it in its group of caches, started before the other runnables whether or
// not this replica leads.
type replicaCache struct{ cache.Cache }

// GetCache returns the cache.
func (c replicaCache) GetCache() cache.Cache { return c.Cache }

// mirror writes the Secret's certificate into the certificate directory each time it
// changes. Writing it (rather than mounting the Secret as a volume) makes a rotation reach
// the servers at once instead of after the kubelet's volume sync, and works where no
// kubelet runs (make dev, tests).
type mirror struct {
	cache cache.Cache
	dir   string
	name  string
}

// NeedLeaderElection is false: every replica serves.
func (m *mirror) NeedLeaderElection() bool { return false }

// Start registers the handler and waits for ctx.
func (m *mirror) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("cert-mirror")
	inf, err := m.cache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return err
	}
	write := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if !ok || s.Name != m.name {
			return
		}
		changed, err := writeCerts(m.dir, s.Data)
		if err != nil {
			log.Error(err, "Writing the serving certificate", "dir", m.dir)
			return
		}
		if changed {
			log.Info("Serving certificate written", "dir", m.dir)
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    write,
		UpdateFunc: func(_, obj any) { write(obj) },
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return inf.RemoveEventHandler(reg)
}

// writeCerts replaces the files whose content differs, each atomically (write, then
// rename), the key before the certificate: a server that reloads on the certificate's
// change then finds the matching key. It reports whether anything changed.
func writeCerts(dir string, data map[string][]byte) (bool, error) {
	if len(data[CertFile]) == 0 || len(data[KeyFile]) == 0 || len(data[CAFile]) == 0 {
		return false, nil // not filled yet
	}
	changed := false
	for _, name := range []string{CAFile, KeyFile, CertFile} {
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && string(old) == string(data[name]) { //nolint:gosec // our own directory
			continue
		}
		tmp, err := os.CreateTemp(dir, "."+name+"-")
		if err != nil {
			return changed, err
		}
		_, werr := tmp.Write(data[name])
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr); err != nil {
			_ = os.Remove(tmp.Name())
			return changed, err
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			_ = os.Remove(tmp.Name())
			return changed, err
		}
		changed = true
	}
	return changed, nil
}

// FilesPresent is the readiness check for certificates provided by someone else
// (cert-manager): ready once the three files are in dir.
func FilesPresent(dir string) healthz.Checker {
	return func(*http.Request) error {
		for _, name := range []string{CertFile, KeyFile, CAFile} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("waiting for %s: %w", name, err)
			}
		}
		return nil
	}
}
