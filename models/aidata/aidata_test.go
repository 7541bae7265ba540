package aidata_test

import (
	"errors"
	"testing"

	"github.com/business-suite/suite/models/aidata"
)

const salesCSV = `date,region,revenue,units,rep
2026-01-05,North,"$1,200.50",10,Ann
2026-01-12,South,900,8,Bob
2026-01-19,North,1500,12,Ann
2026-01-26,South,n/a,7,Cid
2026-02-02,North,1800,15,Ann
2026-02-09,South,700,6,Bob
`

func TestParseFormats(t *testing.T) {
	cases := []struct {
		name, text, format string
		cols               []string
		rows               int
	}{
		{"csv", salesCSV, "", []string{"date", "region", "revenue", "units", "rep"}, 6},
		{"semicolon csv", "a;b\n1;2\n3;4\n", "csv", []string{"a", "b"}, 2},
		{"json rows keep key order", `[{"month":"2026-01","mrr":100},{"month":"2026-02","mrr":120,"note":null}]`, "", []string{"month", "mrr", "note"}, 2},
		{"json wrapper", `{"rows":[{"x":1},{"x":2}]}`, "json", []string{"x"}, 2},
		{"markdown in prose", "Quarterly numbers:\n\n| team | tickets |\n|---|---:|\n| A | 10 |\n| B | 12 |\n\nThanks.", "", []string{"team", "tickets"}, 2},
		{"duplicate and blank headers", "a,a,\n1,2,3\n", "csv", []string{"a", "a_2", "column_3"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab, err := aidata.Parse(c.text, c.format)
			if err != nil {
				t.Fatal(err)
			}
			if len(tab.Rows) != c.rows || len(tab.Columns) != len(c.cols) {
				t.Fatalf("got %v with %d rows", tab.Columns, len(tab.Rows))
			}
			for i := range c.cols {
				if tab.Columns[i] != c.cols[i] {
					t.Fatalf("columns %v, want %v", tab.Columns, c.cols)
				}
			}
		})
	}
}

func TestParseRefusesWhatIsNoTable(t *testing.T) {
	for name, c := range map[string][2]string{
		"prose":          {"We met on Monday. Everyone agreed to ship.", ""},
		"empty":          {"  ", ""},
		"bad json":       {`[{"a":1},`, ""},
		"json scalars":   {`[1,2,3]`, "json"},
		"header only":    {"a,b\n", "csv"},
		"ragged csv":     {"a,b\n1,2,3\n", "csv"},
		"unknown format": {"a,b\n1,2", "xml"},
	} {
		if _, err := aidata.Parse(c[0], c[1]); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	if _, err := aidata.Parse("Just words.", ""); !errors.Is(err, aidata.ErrNoTable) {
		t.Errorf("prose: %v, want ErrNoTable", err)
	}
}

func TestAnalyzeComputesEveryNumber(t *testing.T) {
	tab, err := aidata.Parse(salesCSV, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := aidata.Analyze(tab, aidata.Options{GroupBy: "Region"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Rows != 6 || a.TrendAxis != "date" || a.GroupBy != "region" {
		t.Fatalf("analysis %+v", a)
	}
	rev := col(t, a.Columns, "revenue")
	if rev.Type != aidata.TypeNumber || rev.Count != 5 || rev.Missing != 1 ||
		*rev.Sum != 6100.5 || *rev.Mean != 1220.1 || *rev.Min != 700 || *rev.Max != 1800 {
		t.Fatalf("revenue %+v", rev)
	}
	if rev.Trend == nil || rev.Trend.Points != 5 {
		t.Fatalf("revenue trend %+v", rev.Trend)
	}
	date := col(t, a.Columns, "date")
	if date.Type != aidata.TypeDate || date.Earliest != "2026-01-05" || date.Latest != "2026-02-09" {
		t.Fatalf("date %+v", date)
	}
	rep := col(t, a.Columns, "rep")
	if rep.Type != aidata.TypeText || rep.Distinct != 3 || rep.Top[0] != (aidata.ValueCount{Value: "Ann", Count: 3}) {
		t.Fatalf("rep %+v", rep)
	}
	if len(a.Groups) != 2 || a.Groups[0].Key != "North" || a.Groups[0].Rows != 3 {
		t.Fatalf("groups %+v", a.Groups)
	}
	north := col(t, a.Groups[0].Columns, "revenue")
	if *north.Sum != 4500.5 || north.Trend.Direction != aidata.TrendUp {
		t.Fatalf("north revenue %+v %+v", north, north.Trend)
	}
	south := col(t, a.Groups[1].Columns, "revenue")
	if *south.Sum != 1600 || south.Count != 2 || south.Trend.Direction != aidata.TrendDown {
		t.Fatalf("south revenue %+v %+v", south, south.Trend)
	}
	for _, c := range a.Groups[0].Columns {
		if c.Name == "region" || c.Type != aidata.TypeNumber {
			t.Fatalf("group columns hold %s (%s)", c.Name, c.Type)
		}
	}
}

func TestTrendOverRowOrder(t *testing.T) {
	cases := map[string]struct {
		csv       string
		direction string
		slope     float64
	}{
		"rising":           {"v\n1\n2\n3\n4\n", aidata.TrendUp, 1},
		"falling":          {"v\n40\n30\n20\n10\n", aidata.TrendDown, -10},
		"flat within 5%":   {"v\n100\n101\n100\n102\n", aidata.TrendFlat, 0.5},
		"all zero is flat": {"v\n0\n0\n0\n", aidata.TrendFlat, 0},
	}
	for name, c := range cases {
		tab, err := aidata.Parse(c.csv, "csv")
		if err != nil {
			t.Fatal(err)
		}
		a, err := aidata.Analyze(tab, aidata.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tr := a.Columns[0].Trend
		if a.TrendAxis != aidata.AxisRowOrder || tr.Direction != c.direction || tr.Slope != c.slope {
			t.Errorf("%s: axis %s trend %+v", name, a.TrendAxis, tr)
		}
	}
	one, _ := aidata.Parse("v\n5\n", "csv")
	a, _ := aidata.Analyze(one, aidata.Options{})
	if a.Columns[0].Trend != nil {
		t.Error("one point has a trend")
	}
}

func TestAnalyzeUnknownGroupColumn(t *testing.T) {
	tab, _ := aidata.Parse(salesCSV, "")
	_, err := aidata.Analyze(tab, aidata.Options{GroupBy: "country"})
	var ce *aidata.ColumnError
	if !errors.As(err, &ce) || ce.Name != "country" {
		t.Fatalf("err %v", err)
	}
}

func TestParseNumber(t *testing.T) {
	for in, want := range map[string]float64{"1,234.5": 1234.5, "$99": 99, "-€3.5": -3.5, "12%": 12, " 7 ": 7, "1e3": 1000} {
		if got, ok := aidata.ParseNumber(in); !ok || got != want {
			t.Errorf("%q → %v %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "n/a", "12,34", "abc", "1.2.3", "NaN"} {
		if _, ok := aidata.ParseNumber(in); ok {
			t.Errorf("%q parsed as a number", in)
		}
	}
}

func col(t *testing.T, cols []aidata.ColumnStats, name string) aidata.ColumnStats {
	t.Helper()
	for _, c := range cols {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no column %s", name)
	return aidata.ColumnStats{}
}
