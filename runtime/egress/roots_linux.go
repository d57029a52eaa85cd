package egress

// The system's CA bundle: the first of bundleFiles that exists is read, then every file of
// caDirs. These are the distributions' standard locations (the ones crypto/x509 reads on
// Linux without SSL_CERT_FILE and SSL_CERT_DIR); the guard's image, distroless, has the
// first.
var (
	bundleFiles = []string{
		"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, distroless
		"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
		"/etc/ssl/ca-bundle.pem",                            // openSUSE
		"/etc/pki/tls/cacert.pem",                           // OpenELEC
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
		"/etc/ssl/cert.pem",                                 // Alpine
	}
	caDirs = []string{
		"/etc/ssl/certs",     // SLES
		"/etc/pki/tls/certs", // Fedora, RHEL
	}
)
