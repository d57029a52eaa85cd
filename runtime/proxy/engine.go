package proxy

import "github.com/guardrail-dev/guardrail-operator/runtime/engine"

// Engine returns the engine of the policy in force, nil before the first Apply. The
// guard's MCP front (runtime/mcp) judges with it, so that MCP traffic meets the same
// guardrails, backends and policy version as model traffic.
func (p *Proxy) Engine() *engine.Engine {
	if s := p.state.Load(); s != nil {
		return s.engine
	}
	return nil
}
