package policyreconciler

import (
	"context"
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// name is the controller of kind: "guardrail" for Guardrails. It labels the controller's
// metrics and logs.
func name(kind string) string { return strings.ToLower(kind) }

// requests lists list with opts and returns a request for each item that keep passes
// (nil keeps all). A failed list is logged: a watch has no one to return it to.
func requests(ctx context.Context, c client.Reader, list client.ObjectList, opts []client.ListOption,
	keep func(client.Object) bool) []reconcile.Request {
	if err := c.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing objects to reconcile", "list", fmt.Sprintf("%T", list))
		return nil
	}
	var reqs []reconcile.Request
	_ = eachItem(list, func(o client.Object) {
		if keep == nil || keep(o) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		}
	})
	return reqs
}

// eachItem calls f with each item of list.
func eachItem(list client.ObjectList, f func(client.Object)) error {
	return apimeta.EachListItem(list, func(item runtime.Object) error {
		if o, ok := item.(client.Object); ok {
			f(o)
		}
		return nil
	})
}

// coalesced enqueues what of returns for an object's create, update or delete after
// delay; the queue keeps one request per object however many events arrive meanwhile.
func coalesced(delay time.Duration, of func(context.Context, client.Object) []reconcile.Request) handler.EventHandler {
	enqueue := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range of(ctx, o) {
			q.AddAfter(req, delay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}
