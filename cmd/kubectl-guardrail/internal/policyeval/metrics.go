package policyeval

import "slices"

// Sample is what one line was labelled with and what the guard found in it, both
// restricted to the labels measured.
type Sample struct {
	Labels    []string
	Predicted []string
}

// Score is a confusion count and the figures it gives. A figure is nil when it is
// undefined: precision when nothing was predicted (TP+FP = 0), recall when nothing was
// labelled (TP+FN = 0), F1 when TP+FP+FN = 0.
type Score struct {
	// Support is the lines labelled (TP+FN); Predicted the lines found to hold it (TP+FP).
	Support        int      `json:"support"`
	Predicted      int      `json:"found"`
	TruePositives  int      `json:"truePositives"`
	FalsePositives int      `json:"falsePositives"`
	FalseNegatives int      `json:"falseNegatives"`
	TrueNegatives  int      `json:"trueNegatives"`
	Precision      *float64 `json:"precision"`
	Recall         *float64 `json:"recall"`
	F1             *float64 `json:"f1"`
}

// CategoryScore is the score of one category (or CEL rule).
type CategoryScore struct {
	Category string `json:"category"`
	Score
}

// Average is a macro average: the unweighted mean over Categories categories, those
// labelled or predicted at least once, an undefined figure counting as 0 (as
// scikit-learn's average="macro" with zero_division=0 does). Nil when no category was
// labelled or predicted.
type Average struct {
	Categories int      `json:"categories"`
	Precision  *float64 `json:"precision"`
	Recall     *float64 `json:"recall"`
	F1         *float64 `json:"f1"`
}

// Metrics are the figures of a set of samples.
type Metrics struct {
	// Lines measured (a Report spells them evaluated).
	Lines int `json:"-"`
	// Categories in the order measured.
	Categories []CategoryScore `json:"categories"`
	// Micro sums the counts of every category (one decision per line and category).
	Micro Score `json:"micro"`
	// Macro averages the figures of the categories labelled or predicted.
	Macro Average `json:"macro"`
	// Any is per line: labelled with at least one category, and found to hold at least one.
	Any Score `json:"any"`
}

// Compute measures samples against labels: per label, micro, macro and per line.
func Compute(labels []string, samples []Sample) Metrics {
	m := Metrics{Lines: len(samples), Categories: make([]CategoryScore, len(labels))}
	for i, l := range labels {
		m.Categories[i].Category = l
	}
	var perLine Score
	for _, s := range samples {
		for i, l := range labels {
			count(&m.Categories[i].Score, slices.Contains(s.Labels, l), slices.Contains(s.Predicted, l))
		}
		count(&perLine, len(s.Labels) > 0, len(s.Predicted) > 0)
	}
	var sumP, sumR, sumF float64
	for i := range m.Categories {
		c := &m.Categories[i].Score
		c.figures()
		m.Micro.TruePositives += c.TruePositives
		m.Micro.FalsePositives += c.FalsePositives
		m.Micro.FalseNegatives += c.FalseNegatives
		m.Micro.TrueNegatives += c.TrueNegatives
		if c.Support == 0 && c.Predicted == 0 {
			continue
		}
		m.Macro.Categories++
		sumP += orZero(c.Precision)
		sumR += orZero(c.Recall)
		sumF += orZero(c.F1)
	}
	m.Micro.figures()
	if n := float64(m.Macro.Categories); n > 0 {
		m.Macro.Precision, m.Macro.Recall, m.Macro.F1 = ptr(sumP/n), ptr(sumR/n), ptr(sumF/n)
	}
	perLine.figures()
	m.Any = perLine
	return m
}

func count(s *Score, labelled, predicted bool) {
	switch {
	case labelled && predicted:
		s.TruePositives++
	case predicted:
		s.FalsePositives++
	case labelled:
		s.FalseNegatives++
	default:
		s.TrueNegatives++
	}
}

// figures derives support, predicted, precision, recall and F1 from the counts.
func (s *Score) figures() {
	tp, fp, fn := s.TruePositives, s.FalsePositives, s.FalseNegatives
	s.Support, s.Predicted = tp+fn, tp+fp
	s.Precision, s.Recall, s.F1 = ratio(tp, tp+fp), ratio(tp, tp+fn), ratio(2*tp, 2*tp+fp+fn)
}

func ratio(a, b int) *float64 {
	if b == 0 {
		return nil
	}
	return ptr(float64(a) / float64(b))
}

func ptr(f float64) *float64 { return &f }

func orZero(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
