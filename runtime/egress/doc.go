// Package egress builds the HTTP transports of the guard's outbound calls: to the model
// providers, MCP servers, remote classifiers and the operator's control plane.
//
// Those calls carry credentials (the platform's provider key for keyless apps, a
// classifier's token, the guard's service-account token), so where they go and whom they
// trust is fixed by the guard's code and flags, never read from its environment: a tenant
// who could set the guard container's variables would otherwise route them through a proxy
// of theirs or have them trust a CA of theirs.
//
//   - Proxy is nil: HTTP_PROXY, HTTPS_PROXY and NO_PROXY are not consulted, and every call
//     dials its server directly.
//   - Servers are verified against the roots the caller gives (the control plane's
//     --ca-file, a webhook's caBundle), or else the system's CA bundle read from its fixed
//     locations (SystemRoots): SSL_CERT_FILE and SSL_CERT_DIR add nothing.
//
// The dial, handshake and idle timeouts are those of net/http's DefaultTransport; each
// caller adds its own tuning (idle connections per host, response header timeout, HTTP/1.1
// only) to the transport it gets.
package egress
