package policy

import "testing"

func TestShare(t *testing.T) {
	var nilShare *Share
	tests := []struct {
		name  string
		share *Share
		nodes int
		limit int
		want  int
		rate  float64
		wantR float64
	}{
		{"nil is one node", nilShare, 0, 10, 10, 20, 20},
		{"zero value is one node", &Share{}, 0, 10, 10, 20, 20},
		{"two nodes halve", &Share{}, 2, 10, 5, 20, 10},
		{"rounds up", &Share{}, 3, 10, 4, 30, 10},
		{"never below one", &Share{}, 50, 10, 1, 20, 0.4},
		{"no limit stays none", &Share{}, 4, 0, 0, 0, 0},
		{"nodes below one is one", &Share{}, -3, 10, 10, 20, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.share != nil && tt.nodes != 0 {
				tt.share.SetNodes(tt.nodes)
			}
			if got := tt.share.Int(tt.limit); got != tt.want {
				t.Errorf("Int(%d) with %d nodes = %d, want %d", tt.limit, tt.nodes, got, tt.want)
			}
			if got := tt.share.Float(tt.rate); got != tt.wantR {
				t.Errorf("Float(%v) with %d nodes = %v, want %v", tt.rate, tt.nodes, got, tt.wantR)
			}
		})
	}
}
