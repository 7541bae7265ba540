package aidata

import "math"

// Trends: the axis they are measured over (the first date column, or row
// order) and the least-squares line of a numeric column.

// trendAxis: the first date column with two distinct dates (x = days), else
// row order (x = row index).
func trendAxis(t *Table, types []string) (string, []float64) {
	for c, typ := range types {
		if typ != TypeDate {
			continue
		}
		xs := make([]float64, len(t.Rows))
		distinct := map[float64]bool{}
		ok := true
		for i, row := range t.Rows {
			d, parsed := ParseDate(row[c])
			if !parsed {
				ok = false // a missing date: this column cannot place every row
				break
			}
			xs[i] = float64(d.Unix()) / 86400
			distinct[xs[i]] = true
		}
		if ok && len(distinct) > 1 {
			return t.Columns[c], xs
		}
	}
	xs := make([]float64, len(t.Rows))
	for i := range xs {
		xs[i] = float64(i)
	}
	return AxisRowOrder, xs
}

// trend fits y = a + b·x by least squares. Fewer than two distinct x
// values have no trend.
func trend(xs, ys []float64, mean float64) *Trend {
	n := float64(len(xs))
	if len(xs) < 2 {
		return nil
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	lo, hi := xs[0], xs[0]
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
		lo, hi = math.Min(lo, xs[i]), math.Max(hi, xs[i])
	}
	if sxx == 0 {
		return nil
	}
	slope := sxy / sxx
	first := my + slope*(lo-mx)
	change := slope * (hi - lo)
	tr := &Trend{Slope: round(slope), Change: round(change), Points: len(xs)}
	if first != 0 {
		tr.ChangePct = ptr(round(change / math.Abs(first) * 100))
	}
	scale := math.Abs(mean)
	if scale == 0 {
		scale = math.Abs(change)
	}
	switch {
	case scale == 0 || math.Abs(change) < FlatThreshold*scale:
		tr.Direction = TrendFlat
	case change > 0:
		tr.Direction = TrendUp
	default:
		tr.Direction = TrendDown
	}
	return tr
}
