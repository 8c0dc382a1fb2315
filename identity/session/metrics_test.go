package session

import (
	"testing"
)

type fakeQuality struct {
	SourceWidth int     `json:"source_width"`
	Sharpness   float64 `json:"sharpness"`
	Found       bool    `json:"text_band_found"`
}

func TestQualityMetricsKeepsMeasuredValues(t *testing.T) {
	got := qualityMetrics(map[string]any{"front": fakeQuality{SourceWidth: 1600, Sharpness: 423.5}, "thresholds": map[string]any{"min_sharpness": 350}})
	if got["front.source_width"] != 1600 || got["front.sharpness"] != 423.5 || got["thresholds.min_sharpness"] != 350 || len(got) != 3 {
		t.Fatalf("%v", got)
	}
}
