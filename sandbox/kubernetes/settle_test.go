package kubernetes

import (
	"reflect"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestSettledReport: the sidecar's answer to a settle becomes the turn's egress report (the
// refusals, answers and spend; nothing when it counted nothing), and an answer with an error,
// without a summary or not JSON at all is an error.
func TestSettledReport(t *testing.T) {
	for _, tt := range []struct {
		name, answer string
		want         *sandbox.EgressReport
		wantErr      bool
	}{
		{name: "counted", answer: `{"summary":{"refused":[{"target":"provider.cline-mcp.invalid:80","count":2,"reason":"no provider credential is lent to this run now"},{"target":"api.example:443","count":1,"reason":"allowance spent","budget":true}],"answers":3,"spentUsd":0.25}}` + "\n",
			want: &sandbox.EgressReport{Answers: 3, SpentUSD: 0.25, Refused: []sandbox.Refusal{
				{Target: "provider.cline-mcp.invalid:80", Count: 2, Reason: "no provider credential is lent to this run now"},
				{Target: "api.example:443", Count: 1, Reason: "allowance spent", Budget: true}}}},
		{name: "answers only", answer: `{"summary":{"answers":1}}`, want: &sandbox.EgressReport{Answers: 1}},
		{name: "nothing counted", answer: `{"summary":{}}`},
		{name: "allowed is the provider's", answer: `{"summary":{"allowed":[{"target":"api.example:443","count":4}]}}`},
		{name: "error", answer: `{"error":"settle: settle of a run that was not granted"}`, wantErr: true},
		{name: "no summary", answer: `{}`, wantErr: true},
		{name: "not json", answer: "cline-mcp-egress: unknown\n", wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := settledReport([]byte(tt.answer))
			if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
