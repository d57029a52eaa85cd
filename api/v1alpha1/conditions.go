package v1alpha1

import "github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"

// Condition types. Ready, Reconciling and Stalled follow kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus), so that Flux, Argo CD and `kubectl wait` judge health
// without custom logic; the others are the sub-conditions Ready is computed from.
const (
	// ConditionReady is True when the object's latest generation is fully in effect:
	// every sub-condition is satisfied. Normal polarity (True is good).
	ConditionReady = "Ready"

	// ConditionReconciling is True while the controller is working towards Ready and expects
	// to get there without user action; it is removed once the generation is handled.
	// Abnormal polarity (present and True means "not settled yet").
	ConditionReconciling = "Reconciling"

	// ConditionStalled is True when the controller cannot make progress without a change to
	// the spec (or to an object it references): a terminal error. Abnormal polarity.
	ConditionStalled = "Stalled"

	// ConditionCredentialsResolved (Classifier) is True when the Secret named by
	// spec.credentialsSecretRef exists and holds the key, or when the backend needs none.
	// Normal polarity.
	ConditionCredentialsResolved = "CredentialsResolved"

	// ConditionClassifierResolved (Guardrail) is True when spec.classifierRef names an
	// existing, Ready Classifier that the Guardrail fits (its categories, questions and
	// spans). Normal polarity.
	ConditionClassifierResolved = "ClassifierResolved"

	// ConditionInUse (Classifier) is True while the Classifier is being deleted and
	// Guardrails still reference it: deletion waits for them (InUseProtectionFinalizer) and
	// the message names them. Abnormal polarity; absent otherwise. Ready is not affected:
	// the Classifier keeps serving its Guardrails until they let it go.
	ConditionInUse = "InUse"

	// ConditionEnforced (Guardrail) is True when at least one running pod is selected and
	// every selected pod's guard has acknowledged the latest generation. Normal polarity.
	// Ready does not include it: Ready says the policy is valid and distributed, so GitOps
	// tools never wait on pods of a namespace that is not opted in; a bypass is loud
	// instead (Enforced False with PodsWithoutGuard, a Warning Event, the ENFORCED column).
	ConditionEnforced = "Enforced"
)

// Condition reasons. Event reasons equal these.
const (
	// ReasonSucceeded: the condition holds.
	ReasonSucceeded = "Succeeded"

	// ReasonProgressing: the controller is handling a new generation.
	ReasonProgressing = "Progressing"

	// ReasonInvalidSpec: the spec is valid for the schema but cannot be compiled (an invalid
	// regular expression, a CEL rule that does not type-check, an unknown category). Stalled.
	ReasonInvalidSpec = spec.ReasonInvalidSpec

	// ReasonNoCredentialsRequired: the backend needs no credentials.
	ReasonNoCredentialsRequired = "NoCredentialsRequired"

	// ReasonSecretNotFound: spec.credentialsSecretRef names a Secret that does not exist.
	// The controller waits for it; creating the Secret resolves the condition.
	ReasonSecretNotFound = spec.ReasonSecretNotFound

	// ReasonSecretKeyNotFound: the Secret exists but lacks the key, or the value is empty.
	ReasonSecretKeyNotFound = "SecretKeyNotFound"

	// ReasonClassifierNotFound: spec.classifierRef names a Classifier that does not exist.
	// Creating it resolves the condition without touching the Guardrail.
	ReasonClassifierNotFound = spec.ReasonClassifierNotFound

	// ReasonClassifierNotReady: the referenced Classifier exists but is not Ready yet (it is
	// reconciling, or waiting for its Secret). The Guardrail waits; its Events are Normal.
	ReasonClassifierNotReady = "ClassifierNotReady"

	// ReasonClassifierStalled: the referenced Classifier is Stalled (its spec cannot be
	// compiled), so the Guardrail is Stalled too, with the Classifier's message. Fixing the
	// Classifier resolves both.
	ReasonClassifierStalled = "ClassifierStalled"

	// ReasonInUse (Classifier): the Classifier is being deleted while Guardrails still
	// reference it; deletion waits until none does (the guardrail.dev/in-use-protection
	// finalizer). The reason of the InUse condition and of its Warning Event.
	ReasonInUse = "InUse"

	// ReasonClassifierMismatch: the Guardrail does not fit the Classifier it references
	// (a category the classifier does not have, Redact without spans, a CEL rule naming an
	// unknown question). Fixing either object resolves it.
	ReasonClassifierMismatch = spec.ReasonClassifierMismatch
)

// Reasons of the Enforced condition (Guardrail).
const (
	// ReasonNoPodsSelected: no running pod of the namespace matches the selector.
	ReasonNoPodsSelected = "NoPodsSelected"
	// ReasonAwaitingAcknowledgement: some selected pods' guards have not acknowledged the
	// latest generation yet.
	ReasonAwaitingAcknowledgement = "AwaitingAcknowledgement"
	// ReasonPodsWithoutGuard: some selected pods have no guard (their namespace or they
	// are not opted in to injection): their traffic bypasses the policy.
	ReasonPodsWithoutGuard = "PodsWithoutGuard"
	// ReasonSnapshotRefused: some selected pods' guards refused the policy snapshot (a
	// version skew between guard and operator); they keep their previous policy.
	ReasonSnapshotRefused = "SnapshotRefused"
	// ReasonGuardsNotAnswering: some selected pods' guards stopped polling the control
	// plane for longer than their liveness bound (a crashed or hung guard): what they
	// enforce, if anything, is unknown.
	ReasonGuardsNotAnswering = "GuardsNotAnswering"
	// ReasonNotDistributed: the Guardrail does not compile, so it is not sent to guards.
	ReasonNotDistributed = "NotDistributed"
)

// InUseProtectionFinalizer holds the deletion of a Classifier until no Guardrail
// references it, as kubernetes.io/pvc-protection holds a PersistentVolumeClaim a pod uses.
const InUseProtectionFinalizer = "guardrail.dev/in-use-protection"
