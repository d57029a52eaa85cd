package certs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteCertsMirrorsTheSecretAtomically(t *testing.T) {
	dir := t.TempDir()
	check := FilesPresent(dir)
	if check(nil) == nil {
		t.Fatal("ready with an empty directory")
	}

	t.Run("a Secret not filled yet writes nothing", func(t *testing.T) {
		changed, err := writeCerts(dir, map[string][]byte{CertFile: []byte("c")})
		if err != nil || changed {
			t.Fatalf("changed=%v err=%v", changed, err)
		}
		if check(nil) == nil {
			t.Fatal("ready without a key and CA")
		}
	})
	data := map[string][]byte{CertFile: []byte("cert-1"), KeyFile: []byte("key-1"), CAFile: []byte("ca-1")}
	t.Run("a filled Secret is written, and the directory is ready", func(t *testing.T) {
		changed, err := writeCerts(dir, data)
		if err != nil || !changed {
			t.Fatalf("changed=%v err=%v", changed, err)
		}
		for name, want := range data {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(got) != string(want) {
				t.Fatalf("%s = %q (%v), want %q", name, got, err, want)
			}
		}
		if err := check(nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the same Secret again changes nothing", func(t *testing.T) {
		changed, err := writeCerts(dir, data)
		if err != nil || changed {
			t.Fatalf("changed=%v err=%v", changed, err)
		}
	})
	t.Run("a rotated certificate replaces the files and leaves no temporary file", func(t *testing.T) {
		data[CertFile], data[KeyFile] = []byte("cert-2"), []byte("key-2")
		changed, err := writeCerts(dir, data)
		if err != nil || !changed {
			t.Fatalf("changed=%v err=%v", changed, err)
		}
		got, _ := os.ReadFile(filepath.Join(dir, CertFile))
		if string(got) != "cert-2" {
			t.Fatalf("tls.crt = %q", got)
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 3 {
			t.Fatalf("directory holds %d entries (%v), want the 3 files", len(entries), err)
		}
	})
}
