package injection

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFileCAFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ca.crt")
	ca := &FileCA{Path: path}
	if pem, err := ca.Get(); err == nil || pem != nil {
		t.Fatalf("a missing file gave %q, %v", pem, err)
	}
	if err := os.WriteFile(path, []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pem, err := ca.Get(); err != nil || pem != nil {
		t.Fatalf("an empty file gave %q, %v; want no CA", pem, err)
	}
	if err := os.WriteFile(path, []byte("first CA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pem, _ := ca.Get(); string(pem) != "first CA\n" {
		t.Fatalf("got %q", pem)
	}
	// Replaced as the certificate mirror does: a new file renamed over the old one.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("the rotated CA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if pem, _ := ca.Get(); string(pem) != "the rotated CA\n" {
		t.Fatalf("after rotation got %q", pem)
	}
}

func TestTheWebhookIsNotReadyBeforeItsCertificate(t *testing.T) {
	d := &deferredWebhook{certDir: t.TempDir()}
	if err := d.started(nil); err == nil {
		t.Fatal("ready before the webhook server was started")
	}
}
