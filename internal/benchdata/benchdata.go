// Package benchdata makes the tools/call arguments the benchmarks share
// (mcpparse's BenchmarkParse, bench/run.sh): payloads on the slow paths of
// a strict canonicalizer, deterministic for a size. Test and benchmark
// support only.
package benchdata

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Numbers returns tools/call arguments of about n bytes that are mostly numbers,
// the slow path of a canonicalizer: shortest round-trip doubles of 16-17
// significant digits (as JavaScript and Python print measurements), short
// decimals, exponents in both cases and signs (1.5e10, 6.02E23, 2.5e-7, which
// RFC 8785 lays out otherwise), negative zero, integers up to 2^53 and
// exact powers of ten beyond it: each the exact value of a double, so a
// strict parser (mcpparse) accepts it.
func Numbers(n int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString(`{"series":"sensor-7","points":[`)
	for i := 0; b.Len() < n-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		f := rng.Float64()*2000 - 1000
		fmt := strconv.FormatFloat(f, 'g', -1, 64)
		b.WriteString(`{"t":` + strconv.Itoa(1700000000000+i*250) + `,"v":` + fmt)
		b.WriteString(`,"w":[` + strconv.FormatFloat(float64(i%1000)/8, 'f', -1, 64) + `,` +
			strconv.Itoa(i%10) + `.` + strconv.Itoa(i%97) + `e` + strconv.Itoa(i%30-15) + `,` +
			strconv.FormatFloat(rng.NormFloat64()*1e-6, 'e', -1, 64) + `,` +
			strconv.Itoa(1<<53-i) + `,` + "1" + strings.Repeat("0", 16+i%5) + `,` +
			[]string{"-0", "0.5", "6.02E23", "1.5e10", "-2.5e-7", "1E21"}[i%6] + `],"ok":` +
			strconv.FormatBool(!math.Signbit(f)) + `}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// Text returns tools/call arguments of about n bytes that are mostly non-ASCII
// strings (Japanese, Cyrillic, Greek, emoji, combining marks), some member
// names non-ASCII too, with the odd escape.
func Text(n int) string {
	texts := []string{
		"東京都渋谷区の店舗で購入した商品の返金を希望します。",
		"Здравствуйте, прошу вернуть деньги за заказ №",
		"Παρακαλώ επιστρέψτε τα χρήματα για την παραγγελία",
		"😀🧾🚀 — café crème brûlée, naïve façade, Ångström",
		`नमस्ते, कृपया मेरा पैसा वापस करें \"जल्दी\"`,
		"한국어 텍스트와 중국语文本混合",
	}
	var b strings.Builder
	b.WriteString(`{"язык":"mixed","messages":[`)
	for i := 0; ; i++ {
		el := `{"автор":"Łukasz Żółć ` + strconv.Itoa(i) + `","текст":"` + texts[i%len(texts)] + texts[(i+1)%len(texts)] +
			`","タグ":["返金","срочно","ελληνικά"],"note":"` + texts[(i+2)%len(texts)] + `\n"}`
		if b.Len()+len(el) > n-120 {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(el)
	}
	b.WriteString(`],"подпись":"`)
	for b.Len() < n-90 {
		b.WriteString("ж")
	}
	b.WriteString(`"}`)
	return b.String()
}
