package session

import (
	"context"
	"fmt"

	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/store"
)

// Replicas of `spotter serve` share one store, and each session runs on
// the replica that owns it (package web says which). A replica restores
// only the sessions it owns: Adopt takes one over, as Restore does for a
// whole server after a restart (browser relaunched at its last page,
// pending approvals put back, the interrupted turn resumed), and the
// counts below tell the others how busy this one is.

// Adopt loads a stored session that this Manager now owns and resumes
// it as Restore would: its pending approvals go back in the queue, its
// model's conversation is restored, and an interrupted turn goes on,
// answering only the calls that had no result; a live MCP session is
// opened again (Config.ResumeRemote). A session already held is left as
// it is.
func (m *Manager) Adopt(ctx context.Context, id string) error {
	if m.Has(id) {
		return nil
	}
	rec, err := m.st.Session(ctx, id)
	if err != nil {
		return fmt.Errorf("adopt session %s: %w", id, err)
	}
	if err := m.restoreApprovalsOf(ctx, id); err != nil {
		return fmt.Errorf("adopt session %s: %w", id, err)
	}
	if err := m.restoreOne(ctx, rec); err != nil {
		return fmt.Errorf("adopt session %s: %w", id, err)
	}
	return nil
}

// Has reports whether the Manager holds session id in memory: it runs
// here.
func (m *Manager) Has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sessions[id]
	return ok
}

// Load returns how many sessions this Manager runs: those with a display
// open, or in a run.
func (m *Manager) Load() int {
	n := 0
	for _, s := range m.held() {
		s.mu.Lock()
		if s.disp != nil || s.running {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// Running returns how many sessions are in a turn: status running, not
// waiting for a human or the client.
func (m *Manager) Running() int {
	n := 0
	for _, s := range m.held() {
		s.mu.Lock()
		if s.running && s.rec.Status == store.StatusRunning {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// held returns the sessions in memory.
func (m *Manager) held() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	return ss
}

// restoreApprovalsOf puts one session's stored pending approvals back in
// the queue (restoreApprovals does every session's), so that its resumed
// run re-attaches to them and people can still decide them. Requests
// already in the queue are left there.
func (m *Manager) restoreApprovalsOf(ctx context.Context, session string) error {
	as, err := m.st.Approvals(ctx, store.ApprovalFilter{Session: session, Status: store.ApprovalPending})
	if err != nil {
		return fmt.Errorf("restore approvals: %w", err)
	}
	queued := map[string]bool{}
	for _, p := range m.q.Pending() {
		queued[p.ID] = true
	}
	var rs []approvals.Request
	for _, a := range as {
		if queued[a.ID] {
			continue
		}
		rs = append(rs, m.pendingRequest(a))
	}
	if err := m.q.Restore(rs); err != nil {
		return fmt.Errorf("restore approvals: %w", err)
	}
	return nil
}
