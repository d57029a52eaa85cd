package sharedguard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// Condition reasons of a SharedGuard.
const (
	// ReasonWaitingForCA: the operator's CA, which the guard's pods trust, is not written yet.
	ReasonWaitingForCA = "WaitingForCA"
	// ReasonRollingOut: not every guard pod of the current generation is ready yet.
	ReasonRollingOut = "RollingOut"
	// ReasonNameInUse: a Deployment, Service or EndpointSlice of the SharedGuard's name
	// exists and is not the SharedGuard's.
	ReasonNameInUse = "NameInUse"
	// ReasonExtProcUnavailable: the SharedGuard is in ExtProc mode and the manager has no
	// image of the Envoy external processor (--guard-extproc-image).
	ReasonExtProcUnavailable = "ExtProcUnavailable"
	// ReasonTLSSecretNotFound: spec.tls.secretName names a Secret that does not exist (yet:
	// cert-manager writes it once the Certificate is issued). The guard's pods cannot
	// start without it; creating it resolves the condition. Reconciling.
	ReasonTLSSecretNotFound = "TLSSecretNotFound" //nolint:gosec // a condition reason, not a credential
	// ReasonTLSSecretInvalid: the Secret spec.tls.secretName names lacks tls.crt or
	// tls.key, or they are not a certificate and its key, or the certificate expired.
	// Pods that start now cannot serve; running ones keep the pair they loaded. Stalled
	// until the Secret (or the spec) changes.
	ReasonTLSSecretInvalid = "TLSSecretInvalid"
)

const (
	// ServicePort is the port of a shared guard's Service in Proxy mode, cleartext HTTP.
	ServicePort = 80
	// TLSServicePort is the port of a shared guard's Service in Proxy mode with spec.tls,
	// HTTPS's own (status.url https://NAME.NAMESPACE.svc), as cleartext is on 80: apps'
	// base URLs carry no port either way.
	TLSServicePort = 443
	// tlsServicePortName names that port, in the Service and its EndpointSlices.
	tlsServicePortName = "https"
	// ExtProcServicePort is the port of a shared guard's Service in ExtProc mode: the
	// processor's gRPC port (h2c).
	ExtProcServicePort = injection.ExtProcPort
	// servicePortName names the Proxy mode's port, in the Service and its EndpointSlices
	// (ExtProc's is injection.PortNameGRPC).
	servicePortName = "http"
	// managedBy is the EndpointSlices' endpointslice.kubernetes.io/managed-by: the
	// Service has no selector, so Kubernetes' controller leaves them to this one.
	managedBy = "sharedguard.guardrail.dev"
	// defaultReplicas is spec.replicas's default (the CRD's default, for objects written
	// before it).
	defaultReplicas = 2
	// recheck is how often a settled SharedGuard is rendered again: the operator's CA
	// rotates without an event here.
	recheck = 10 * time.Minute
	// waitCA and waitRollout are how soon a SharedGuard waiting for its CA or its pods is
	// looked at again on top of the watches.
	waitCA, waitRollout = 5 * time.Second, time.Minute
	// restartedAt is what kubectl rollout restart writes into the pod template; it is kept.
	restartedAt = "kubectl.kubernetes.io/restartedAt"
	// podTemplateHash is the Deployment controller's label on the pods it creates.
	podTemplateHash = appsv1.DefaultDeploymentUniqueLabelKey
)

// systemNamespaces run no shared guard (the injector never injects them either).
var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// Reconciler runs each SharedGuard as a Deployment of guard pods behind a Service.
type Reconciler struct {
	Client client.Client
	// APIReader reads an object the cache does not hold: one of the SharedGuard's names
	// that is not labelled as its own.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Renderer renders the guard's pod as the injector renders guards.
	Renderer *injection.Renderer
	// OperatorNamespace runs no shared guard.
	OperatorNamespace string
}

// +kubebuilder:rbac:groups=guardrail.dev,resources=sharedguards,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=sharedguards/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// Secrets (spec.tls.secretName, checked in tls.go) are read with the rights of
// config/rbac/secret_reader_role.yaml, which the manager holds for Classifiers' credentials
// (bound cluster-wide or in the watched namespaces, outside the generated role); their
// metadata are watched, as the Classifier reconciler watches them.

// SetupWithManager registers the reconciler. The manager's cache holds only the
// Deployments, Services and EndpointSlices labelled guardrail.dev/shared-guard, and the
// injected pods (controllers.Options.Cache); Secrets by their metadata, for spec.tls.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("sharedguard").
		For(&v1alpha1.SharedGuard{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&discoveryv1.EndpointSlice{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name := o.GetLabels()[v1alpha1.LabelSharedGuard]
			if name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.forSecret), builder.OnlyMetadata).
		Complete(r)
}

// Reconcile renders the SharedGuard's pod, writes its Deployment, Service and
// EndpointSlices, and reports how many guard pods serve.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	sg := &v1alpha1.SharedGuard{}
	if err := r.Client.Get(ctx, req.NamespacedName, sg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sg.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the objects it owns are garbage-collected
	}
	replicas := ptr.Deref(sg.Spec.Replicas, defaultReplicas)
	patcher := status.NewPatcher(r.Client, r.Recorder, sg).
		InEffect(func() string {
			return fmt.Sprintf("Generation %d is in effect: %d guard pods serve %s", sg.Generation, sg.Status.ReadyReplicas, sg.Status.URL)
		}).
		WaitingReasons(ReasonWaitingForCA, ReasonRollingOut, ReasonTLSSecretNotFound, v1alpha1.ReasonProgressing)
	defer policystatus.Settle(ctx, patcher, sg, &result, &retErr, func() time.Duration { return recheck })

	if why := r.refusedNamespace(sg.Namespace); why != "" {
		status.MarkStalled(sg, v1alpha1.ReasonInvalidSpec, why)
		return ctrl.Result{}, reconcile.TerminalError(errors.New(why))
	}
	extProc := sg.Spec.Mode == v1alpha1.SharedGuardModeExtProc
	render := func(labels, annotations map[string]string) (corev1.PodTemplateSpec, []string, error) {
		return r.Renderer.SharedGuardPodWithTLS(labels, annotations, tlsSecretName(sg))
	}
	if extProc {
		render = func(labels, annotations map[string]string) (corev1.PodTemplateSpec, []string, error) {
			return r.Renderer.SharedExtProcPodWithTLS(labels, annotations, tlsSecretName(sg))
		}
	}
	tmpl, refused, err := render(podLabels(sg), settings(sg))
	switch {
	case errors.Is(err, injection.ErrNoExtProcImage):
		status.MarkStalled(sg, ReasonExtProcUnavailable, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	case errors.Is(err, injection.ErrNoCA):
		status.MarkReconciling(sg, ReasonWaitingForCA, "Waiting for the operator's CA certificate, which the guard's pods trust")
		return ctrl.Result{RequeueAfter: waitCA}, nil
	case err != nil:
		status.MarkStalled(sg, v1alpha1.ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	case len(refused) > 0:
		msg := specMessage(strings.Join(refused, "; "))
		status.MarkStalled(sg, v1alpha1.ReasonInvalidSpec, msg)
		return ctrl.Result{}, reconcile.TerminalError(errors.New(msg))
	}
	selector := map[string]string{v1alpha1.LabelSharedGuard: sg.Name}
	tmpl.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
	}}

	if err := r.ensureService(ctx, sg); err != nil {
		return r.failed(sg, err)
	}
	dep, err := r.ensureDeployment(ctx, sg, tmpl, replicas, selector)
	if err != nil {
		return r.failed(sg, err)
	}
	ready, err := r.ensureEndpoints(ctx, sg, tmpl.Labels)
	if err != nil {
		return r.failed(sg, err)
	}
	if err := r.ensureDisruptionBudget(ctx, sg, replicas, selector); err != nil {
		return r.failed(sg, err)
	}

	// The Secret is checked after the objects are written: pods that hold an earlier pair
	// keep serving behind the Service, and its EndpointSlices must follow them.
	tlsReason, tlsProblem, err := r.checkTLSSecret(ctx, sg)
	if err != nil {
		return ctrl.Result{}, err
	}

	sg.Status.URL = fmt.Sprintf("http://%s.%s.svc", sg.Name, sg.Namespace)
	switch {
	case extProc && sg.Spec.TLS != nil:
		sg.Status.URL = fmt.Sprintf("https://%s.%s.svc:%d", sg.Name, sg.Namespace, ExtProcServicePort)
	case extProc:
		sg.Status.URL = fmt.Sprintf("http://%s.%s.svc:%d", sg.Name, sg.Namespace, ExtProcServicePort)
	case sg.Spec.TLS != nil:
		sg.Status.URL = fmt.Sprintf("https://%s.%s.svc", sg.Name, sg.Namespace)
	}
	sg.Status.Replicas = dep.Status.Replicas
	sg.Status.ReadyReplicas = ready
	sg.Status.Selector = labels.SelectorFromSet(selector).String()
	switch tlsReason {
	case ReasonTLSSecretNotFound:
		status.MarkReconciling(sg, tlsReason, tlsProblem)
		return ctrl.Result{RequeueAfter: waitRollout}, nil
	case ReasonTLSSecretInvalid:
		status.MarkStalled(sg, tlsReason, tlsProblem)
		return ctrl.Result{}, reconcile.TerminalError(errors.New(tlsProblem))
	}
	rolledOut := dep.Status.ObservedGeneration >= dep.Generation && dep.Status.UpdatedReplicas == replicas &&
		dep.Status.Replicas == replicas && ready >= replicas
	if !rolledOut {
		status.MarkReconciling(sg, ReasonRollingOut, fmt.Sprintf("%d of %d guard pods of generation %d serve; a guard "+
			"pod serves once it holds its policy", min(ready, replicas), replicas, sg.Generation))
		return ctrl.Result{RequeueAfter: waitRollout}, nil
	}
	return ctrl.Result{}, nil
}

// failed records a name conflict as Stalled and returns any other error for a retry.
func (r *Reconciler) failed(sg *v1alpha1.SharedGuard, err error) (ctrl.Result, error) {
	var inUse *nameInUse
	if errors.As(err, &inUse) {
		status.MarkStalled(sg, ReasonNameInUse, inUse.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	return ctrl.Result{}, err
}

// refusedNamespace says why no shared guard runs in namespace, or "".
func (r *Reconciler) refusedNamespace(namespace string) string {
	if slices.Contains(systemNamespaces, namespace) || namespace == r.OperatorNamespace {
		return fmt.Sprintf("no shared guard runs in namespace %s: the operator's and the system namespaces are never guarded", namespace)
	}
	return ""
}

// nameInUse is an object of the SharedGuard's name that someone else owns.
type nameInUse struct{ kind, name string }

func (e *nameInUse) Error() string {
	return fmt.Sprintf("a %s named %s exists in the namespace and is not this SharedGuard's: rename one of them", e.kind, e.name)
}

// podLabels are the labels of the guard's pods: spec.podLabels, the SharedGuard's name and,
// in ExtProc mode, the mode. Pods of the other mode (a SharedGuard re-created under the
// same name) then lack a label or carry one more, and never serve behind its Service.
func podLabels(sg *v1alpha1.SharedGuard) map[string]string {
	l := maps.Clone(sg.Spec.PodLabels)
	if l == nil {
		l = map[string]string{}
	}
	l[v1alpha1.LabelSharedGuard] = sg.Name
	if sg.Spec.Mode == v1alpha1.SharedGuardModeExtProc {
		l[v1alpha1.LabelSharedGuardMode] = string(v1alpha1.SharedGuardModeExtProc)
	}
	return l
}

// servicePorts are the ports of the SharedGuard's Service and its EndpointSlices: in
// Proxy mode http (80, to the guard's proxy port), or with spec.tls https (443, to the
// guard's proxy port, appProtocol https); in ExtProc mode grpc (15081), whose
// appProtocol is kubernetes.io/h2c in cleartext and https over TLS (spec.tls).
func (r *Reconciler) servicePorts(sg *v1alpha1.SharedGuard) ([]corev1.ServicePort, []discoveryv1.EndpointPort) {
	if sg.Spec.Mode == v1alpha1.SharedGuardModeExtProc {
		appProtocol := injection.ExtProcAppProtocol
		if sg.Spec.TLS != nil {
			appProtocol = injection.ExtProcTLSAppProtocol
		}
		return []corev1.ServicePort{{
				Name: injection.PortNameGRPC, Port: ExtProcServicePort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(injection.ExtProcPort), AppProtocol: ptr.To(appProtocol),
			}}, []discoveryv1.EndpointPort{{
				Name: ptr.To(injection.PortNameGRPC), Port: ptr.To[int32](injection.ExtProcPort), Protocol: ptr.To(corev1.ProtocolTCP),
				AppProtocol: ptr.To(appProtocol),
			}}
	}
	port := r.Renderer.Guard().ProxyPort
	if sg.Spec.TLS != nil {
		return []corev1.ServicePort{{
				Name: tlsServicePortName, Port: TLSServicePort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(port),
				AppProtocol: ptr.To(injection.ExtProcTLSAppProtocol),
			}}, []discoveryv1.EndpointPort{{
				Name: ptr.To(tlsServicePortName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP),
				AppProtocol: ptr.To(injection.ExtProcTLSAppProtocol),
			}}
	}
	return []corev1.ServicePort{{
			Name: servicePortName, Port: ServicePort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(port),
		}}, []discoveryv1.EndpointPort{{
			Name: ptr.To(servicePortName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP),
		}}
}

// settings are the injector's annotations that say what the spec says.
func settings(sg *v1alpha1.SharedGuard) map[string]string {
	a := map[string]string{}
	set := func(key string, q interface{ String() string }, ok bool) {
		if ok {
			a[key] = q.String()
		}
	}
	if r := sg.Spec.Resources; r != nil {
		set(guardv1.AnnotationCPU, r.CPURequest, r.CPURequest != nil)
		set(guardv1.AnnotationMemory, r.MemoryRequest, r.MemoryRequest != nil)
		set(guardv1.AnnotationCPULimit, r.CPULimit, r.CPULimit != nil)
		set(guardv1.AnnotationMemoryLimit, r.MemoryLimit, r.MemoryLimit != nil)
	}
	if u := sg.Spec.OpenAIUpstream; u != "" {
		a[guardv1.AnnotationOpenAIUpstream] = u
	}
	if u := sg.Spec.AnthropicUpstream; u != "" {
		a[guardv1.AnnotationAnthropicUpstream] = u
	}
	if u := sg.Spec.GeminiUpstream; u != "" {
		a[guardv1.AnnotationGeminiUpstream] = u
	}
	if sg.Spec.AuditLog {
		a[guardv1.AnnotationAuditLog] = "true"
	}
	return a
}

// specFields name the spec's fields in the injector's messages about its annotations.
var specFields = strings.NewReplacer(
	"annotation "+guardv1.AnnotationCPULimit, "spec.resources.cpuLimit",
	"annotation "+guardv1.AnnotationMemoryLimit, "spec.resources.memoryLimit",
	"annotation "+guardv1.AnnotationCPU, "spec.resources.cpuRequest",
	"annotation "+guardv1.AnnotationMemory, "spec.resources.memoryRequest",
	"annotation "+guardv1.AnnotationOpenAIUpstream, "spec.openAIUpstream",
	"annotation "+guardv1.AnnotationAnthropicUpstream, "spec.anthropicUpstream",
	"annotation "+guardv1.AnnotationGeminiUpstream, "spec.geminiUpstream",
	"annotation "+guardv1.AnnotationAuditLog, "spec.auditLog",
	"; the default is used", "",
)

func specMessage(msg string) string { return specFields.Replace(msg) }

// ensureService writes the SharedGuard's Service: no selector, so that only the
// EndpointSlices this reconciler writes (verified guard pods) receive its traffic.
func (r *Reconciler) ensureService(ctx context.Context, sg *v1alpha1.SharedGuard) error {
	ports, _ := r.servicePorts(sg)
	want := corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports}
	cur := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(sg), cur)
	if apierrors.IsNotFound(err) {
		svc := &corev1.Service{ObjectMeta: r.meta(sg, sg.Name), Spec: want}
		return r.create(ctx, sg, svc, "Service")
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(cur, sg) {
		return &nameInUse{"Service", sg.Name}
	}
	if cur.Spec.Type == want.Type && cur.Spec.Selector == nil && equality.Semantic.DeepDerivative(want.Ports, cur.Spec.Ports) &&
		len(want.Ports) == len(cur.Spec.Ports) {
		return nil
	}
	cur.Spec.Type, cur.Spec.Ports, cur.Spec.Selector = want.Type, want.Ports, nil
	return r.Client.Update(ctx, cur)
}

// ensureDeployment writes the SharedGuard's Deployment and returns it as it is now. An
// edit by anyone else (a container added, an argument changed) is reverted: a pod that
// is not the rendered guard would not verify and would never serve anyway.
func (r *Reconciler) ensureDeployment(ctx context.Context, sg *v1alpha1.SharedGuard, tmpl corev1.PodTemplateSpec,
	replicas int32, selector map[string]string) (*appsv1.Deployment, error) {
	want := appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas),
		Selector: &metav1.LabelSelector{MatchLabels: selector},
		Template: tmpl,
		Strategy: appsv1.DeploymentStrategy{
			Type: appsv1.RollingUpdateDeploymentStrategyType,
			// A guard pod serves only once it holds its policy: keep the old ones until then.
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))},
		},
		RevisionHistoryLimit: ptr.To[int32](3),
	}
	cur := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(sg), cur)
	if apierrors.IsNotFound(err) {
		dep := &appsv1.Deployment{ObjectMeta: r.meta(sg, sg.Name), Spec: want}
		return dep, r.create(ctx, sg, dep, "Deployment")
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(cur, sg) {
		return nil, &nameInUse{"Deployment", sg.Name}
	}
	if v, ok := cur.Spec.Template.Annotations[restartedAt]; ok {
		want.Template.Annotations[restartedAt] = v
	}
	// DeepDerivative passes fields set only in cur (a hostAliases added by hand): the
	// template must also still verify as the guard.
	curPod := &corev1.Pod{ObjectMeta: cur.Spec.Template.ObjectMeta, Spec: cur.Spec.Template.Spec}
	if equality.Semantic.DeepDerivative(want, cur.Spec) && maps.Equal(want.Template.Labels, cur.Spec.Template.Labels) &&
		maps.Equal(want.Template.Annotations, cur.Spec.Template.Annotations) && sameLists(want.Template.Spec, cur.Spec.Template.Spec) &&
		injection.VerifyGuard(curPod, r.Renderer.Guard()) == nil {
		return cur, nil
	}
	cur.Spec = want
	if err := r.Client.Update(ctx, cur); err != nil {
		return nil, err
	}
	return cur, nil
}

// sameLists reports whether the pod specs have as many containers, volumes and
// environment variables in each container: DeepDerivative takes a longer list for a
// derivative of a shorter one.
func sameLists(want, got corev1.PodSpec) bool {
	if len(want.Containers) != len(got.Containers) || len(want.InitContainers) != len(got.InitContainers) ||
		len(want.Volumes) != len(got.Volumes) || len(got.EphemeralContainers) > 0 {
		return false
	}
	for i := range want.Containers {
		w, g := &want.Containers[i], &got.Containers[i]
		if len(w.Env) != len(g.Env) || len(w.Args) != len(g.Args) || len(w.VolumeMounts) != len(g.VolumeMounts) ||
			len(g.EnvFrom) > 0 || !slices.Equal(w.Command, g.Command) {
			return false
		}
	}
	return true
}

// ensureEndpoints writes the Service's EndpointSlices: the addresses of the pods that
// serve as this SharedGuard's guard, and returns how many are ready. A pod serves when
// the manager verified that its spec carries the rendered guard (the pod cache's
// verification) and its labels are exactly the template's (plus the Deployment's
// pod-template-hash), so that the Guardrails that select it are the SharedGuard's.
// Anyone may label a pod guardrail.dev/shared-guard; no other pod receives its traffic.
func (r *Reconciler) ensureEndpoints(ctx context.Context, sg *v1alpha1.SharedGuard, want map[string]string) (int32, error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(sg.Namespace), client.MatchingLabels{v1alpha1.LabelSharedGuard: sg.Name}); err != nil {
		return 0, err
	}
	byFamily := map[discoveryv1.AddressType][]discoveryv1.Endpoint{}
	var ready int32
	for i := range pods.Items {
		p := &pods.Items[i]
		if !Serves(p, want) {
			continue
		}
		ok := podReady(p)
		if ok {
			ready++
		}
		for _, ip := range p.Status.PodIPs {
			addr, err := netip.ParseAddr(ip.IP)
			if err != nil {
				continue
			}
			family := discoveryv1.AddressTypeIPv4
			if addr.Is6() {
				family = discoveryv1.AddressTypeIPv6
			}
			byFamily[family] = append(byFamily[family], discoveryv1.Endpoint{
				Addresses:  []string{addr.String()},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ok), Serving: ptr.To(ok), Terminating: ptr.To(false)},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			})
		}
	}
	for _, family := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
		eps := byFamily[family]
		slices.SortFunc(eps, func(a, b discoveryv1.Endpoint) int { return strings.Compare(a.Addresses[0], b.Addresses[0]) })
		if err := r.ensureSlice(ctx, sg, family, eps); err != nil {
			return 0, err
		}
	}
	return ready, nil
}

// Serves reports whether a cached pod serves as the guard of the SharedGuard whose pod
// template has the labels want: verified, of the template's kind (the Envoy external
// processor, port grpc, for an ExtProc SharedGuard's; the guard's proxy otherwise), running,
// not being deleted, and labelled exactly as the template (and the Deployment's
// pod-template-hash).
func Serves(p *corev1.Pod, want map[string]string) bool {
	if guards.GuardVerification(p) != nil || !p.DeletionTimestamp.IsZero() || p.Status.Phase != corev1.PodRunning {
		return false
	}
	if guards.GuardIsExtProc(p) != (want[v1alpha1.LabelSharedGuardMode] == string(v1alpha1.SharedGuardModeExtProc)) {
		return false
	}
	for k, v := range want {
		if got, ok := p.Labels[k]; !ok || got != v {
			return false
		}
	}
	for k := range p.Labels {
		if _, ok := want[k]; !ok && k != podTemplateHash {
			return false
		}
	}
	return true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ensureSlice writes the EndpointSlice of one address family; an IPv6 slice without
// endpoints is not kept.
func (r *Reconciler) ensureSlice(ctx context.Context, sg *v1alpha1.SharedGuard, family discoveryv1.AddressType, eps []discoveryv1.Endpoint) error {
	name := sg.Name + "-" + strings.ToLower(string(family))
	_, ports := r.servicePorts(sg)
	cur := &discoveryv1.EndpointSlice{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: sg.Namespace, Name: name}, cur)
	switch {
	case apierrors.IsNotFound(err):
		if family == discoveryv1.AddressTypeIPv6 && len(eps) == 0 {
			return nil
		}
		meta := r.meta(sg, name)
		meta.Labels[discoveryv1.LabelServiceName] = sg.Name
		meta.Labels[discoveryv1.LabelManagedBy] = managedBy
		return r.create(ctx, sg, &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: family, Endpoints: eps, Ports: ports}, "EndpointSlice")
	case err != nil:
		return err
	case !metav1.IsControlledBy(cur, sg):
		return &nameInUse{"EndpointSlice", name}
	case family == discoveryv1.AddressTypeIPv6 && len(eps) == 0:
		return client.IgnoreNotFound(r.Client.Delete(ctx, cur))
	}
	if equality.Semantic.DeepEqual(cur.Endpoints, eps) && equality.Semantic.DeepEqual(cur.Ports, ports) &&
		cur.Labels[discoveryv1.LabelServiceName] == sg.Name && cur.Labels[discoveryv1.LabelManagedBy] == managedBy {
		return nil
	}
	cur.Endpoints, cur.Ports = eps, ports
	cur.Labels[discoveryv1.LabelServiceName] = sg.Name
	cur.Labels[discoveryv1.LabelManagedBy] = managedBy
	return r.Client.Update(ctx, cur)
}

// meta is the metadata of an object the SharedGuard owns; the label keeps it in the
// manager's cache.
func (r *Reconciler) meta(sg *v1alpha1.SharedGuard, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: sg.Namespace, Labels: map[string]string{
		v1alpha1.LabelSharedGuard:      sg.Name,
		"app.kubernetes.io/name":       guardv1.ContainerName,
		"app.kubernetes.io/managed-by": "guardrail-operator",
	}}
}

// create creates obj owned by sg; an object of its name that the cache does not hold
// (not labelled as the SharedGuard's) is someone else's.
func (r *Reconciler) create(ctx context.Context, sg *v1alpha1.SharedGuard, obj client.Object, kind string) error {
	if err := controllerutil.SetControllerReference(sg, obj, r.Client.Scheme()); err != nil {
		return err
	}
	err := r.Client.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Ours, written by an earlier reconcile whose watch event is not in the cache yet,
	// or someone else's.
	cur := obj.DeepCopyObject().(client.Object)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return err
	}
	if metav1.IsControlledBy(cur, sg) {
		return fmt.Errorf("the %s %s is not in the cache yet", kind, obj.GetName())
	}
	return &nameInUse{kind, obj.GetName()}
}

// ensureDisruptionBudget keeps a voluntary disruption (a node drain) from taking more
// than one guard pod at a time when there are several; with one replica there is none,
// so that a drain is not blocked.
func (r *Reconciler) ensureDisruptionBudget(ctx context.Context, sg *v1alpha1.SharedGuard, replicas int32, selector map[string]string) error {
	want := policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		Selector:       &metav1.LabelSelector{MatchLabels: selector},
	}
	cur := &policyv1.PodDisruptionBudget{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(sg), cur)
	switch {
	case apierrors.IsNotFound(err):
		if replicas < 2 {
			return nil
		}
		return r.create(ctx, sg, &policyv1.PodDisruptionBudget{ObjectMeta: r.meta(sg, sg.Name), Spec: want}, "PodDisruptionBudget")
	case err != nil:
		return err
	case !metav1.IsControlledBy(cur, sg):
		return &nameInUse{"PodDisruptionBudget", sg.Name}
	case replicas < 2:
		return client.IgnoreNotFound(r.Client.Delete(ctx, cur))
	case equality.Semantic.DeepEqual(cur.Spec.MaxUnavailable, want.MaxUnavailable) && cur.Spec.MinAvailable == nil &&
		equality.Semantic.DeepEqual(cur.Spec.Selector, want.Selector):
		return nil
	}
	cur.Spec = want
	return r.Client.Update(ctx, cur)
}
