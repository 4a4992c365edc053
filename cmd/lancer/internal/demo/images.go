package demo

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"sync"
)

// ImageSize is the width and height of a generated image, in pixels: big
// enough to show a shape clearly in a browser, small enough that thousands
// of them are generated, encoded and embedded in a second or two.
const ImageSize = 96

// Shapes and Colours are the classes the generator draws, in a fixed order
// (never a map's) so that the same seed gives the same images everywhere.
var (
	Shapes  = [...]string{"circle", "square", "triangle", "diamond", "star", "cross"}
	Colours = [...]string{"red", "orange", "yellow", "green", "blue", "purple"}
)

// Classes is the number of (colour, shape) combinations.
const Classes = len(Shapes) * len(Colours)

var colourRGB = [][3]int{
	{214, 39, 40},  // red
	{245, 130, 20}, // orange
	{240, 200, 20}, // yellow
	{44, 160, 44},  // green
	{31, 90, 220},  // blue
	{140, 60, 180}, // purple
}

// backgrounds are plain, far enough from every shape colour (also after
// jitter and gradient) that Embed can tell shape from background.
var backgrounds = []struct {
	name string
	rgb  [3]int
}{
	{"white", [3]int{250, 250, 250}},
	{"light grey", [3]int{222, 222, 226}},
	{"cream", [3]int{250, 243, 225}},
	{"pale blue", [3]int{225, 235, 247}},
	{"charcoal", [3]int{40, 42, 50}},
	{"slate", [3]int{62, 72, 90}},
}

// Item is one generated image and what it shows.
type Item struct {
	ID         int64
	Shape      string
	Colour     string
	Label      string // "<colour> <shape>"
	Background string
	Caption    string
	Image      *image.RGBA
}

// ClassOf returns the colour and shape of image i for a seed without
// drawing it. Every run of Classes consecutive ids holds each combination
// once, in a shuffled order, so even a small demo has every class and the
// classes are balanced.
func ClassOf(seed int64, i int) (colour, shape string) {
	block := uint64(i / Classes)
	// The high bit keeps the shuffles' streams apart from the images'.
	r := rand.New(rand.NewPCG(uint64(seed), block|1<<63))
	c := r.Perm(Classes)[i%Classes]
	return Colours[c/len(Shapes)], Shapes[c%len(Shapes)]
}

// Generate draws image i of the set a seed defines. It depends on nothing
// but its arguments: the geometry is integer arithmetic (no floating-point
// rounding that could differ between CPUs) and the randomness a PCG stream
// per image, so images can be generated in any order, in parallel, on any
// machine, with the same pixels.
func Generate(seed int64, i int) Item {
	colour, shape := ClassOf(seed, i)
	r := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
	ci, si := index(Colours[:], colour), index(Shapes[:], shape)
	bg := backgrounds[r.IntN(len(backgrounds))]
	var fg [3]int
	for k := range fg {
		fg[k] = clamp255(colourRGB[ci][k] + r.IntN(37) - 18)
	}
	gradient := r.IntN(21) - 10 // per channel, top to bottom

	// Geometry in quarter pixels: a shape's half extent and centre.
	const q = 4
	half := 10 + r.IntN(25) // pixels
	cx := (half+3)*q + r.IntN((ImageSize-2*half-6)*q+1)
	cy := (half+3)*q + r.IntN((ImageSize-2*half-6)*q+1)
	rad := half*q + r.IntN(q)
	inside := shapeTest(si, int64(cx), int64(cy), int64(rad))

	img := image.NewRGBA(image.Rect(0, 0, ImageSize, ImageSize))
	for y := range ImageSize {
		var b [3]int
		for k := range b {
			b[k] = clamp255(bg.rgb[k] + gradient*(2*y-ImageSize)/ImageSize)
		}
		for x := range ImageSize {
			// 2×2 samples per pixel smooth the edges.
			cover := 0
			if abs(x*q+2-cx) <= rad+q && abs(y*q+2-cy) <= rad+q {
				for _, s := range [4][2]int{{1, 1}, {3, 1}, {1, 3}, {3, 3}} {
					if inside(int64(x*q+s[0]), int64(y*q+s[1])) {
						cover++
					}
				}
			}
			o := img.PixOffset(x, y)
			for k := range 3 {
				img.Pix[o+k] = uint8((b[k]*(4-cover) + fg[k]*cover) / 4)
			}
			img.Pix[o+3] = 255
		}
	}

	size := "medium"
	switch {
	case half < 17:
		size = "small"
	case half >= 26:
		size = "large"
	}
	where := placement(cx/q, cy/q)
	label := colour + " " + shape
	caption := fmt.Sprintf("A %s %s %s on a %s background.", size, label, where, bg.name)
	if r.IntN(2) == 0 {
		caption = fmt.Sprintf("%s background with a %s %s %s.", capitalize(bg.name), size, label, where)
	}
	return Item{ID: int64(i), Shape: shape, Colour: colour, Label: label, Background: bg.name, Caption: caption, Image: img}
}

// pngEncoder reuses its compressors' buffers: allocating and clearing
// them for every small image cost more than the compression.
var pngEncoder = &png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngPool{}}

type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

// EncodePNG returns img as PNG bytes.
func EncodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	if err := pngEncoder.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("demo: encode png: %w", err)
	}
	return buf.Bytes(), nil
}

// placement names where in the picture a point is, by thirds.
func placement(x, y int) string {
	v := [3]string{"top", "middle", "bottom"}[min(3*y/ImageSize, 2)]
	h := [3]string{"left", "centre", "right"}[min(3*x/ImageSize, 2)]
	switch {
	case v == "middle" && h == "centre":
		return "in the centre"
	case v == "middle":
		return "on the " + h
	case h == "centre":
		return "at the " + v
	}
	return "in the " + v + " " + h + " corner"
}

// unit polygons, in thousandths of the half extent, scaled with integer
// arithmetic.
var (
	trianglePoly = [][2]int64{{0, -1000}, {866, 500}, {-866, 500}}
	// A five-pointed star, inner radius 0.4: round(1000·cos/sin) of every
	// 36° from the top, written out so no trigonometry is needed.
	starPoly = [][2]int64{{0, -1000}, {235, -324}, {951, -309}, {380, 124}, {588, 809},
		{0, 400}, {-588, 809}, {-380, 124}, {-951, -309}, {-235, -324}}
)

// shapeTest returns the membership test of shape si centred at (cx, cy)
// with half extent r.
func shapeTest(si int, cx, cy, r int64) func(x, y int64) bool {
	switch Shapes[si] {
	case "circle":
		return func(x, y int64) bool { dx, dy := x-cx, y-cy; return dx*dx+dy*dy <= r*r }
	case "square":
		return func(x, y int64) bool { return 5*abs64(x-cx) <= 4*r && 5*abs64(y-cy) <= 4*r }
	case "diamond":
		return func(x, y int64) bool { return abs64(x-cx)+abs64(y-cy) <= r }
	case "cross":
		return func(x, y int64) bool {
			dx, dy := abs64(x-cx), abs64(y-cy)
			return (3*dx <= r && 10*dy <= 9*r) || (3*dy <= r && 10*dx <= 9*r)
		}
	case "triangle":
		return polygonTest(trianglePoly, cx, cy, r)
	default: // star
		return polygonTest(starPoly, cx, cy, r)
	}
}

// polygonTest scales a unit polygon and returns its even-odd membership
// test, exact in integers.
func polygonTest(unit [][2]int64, cx, cy, r int64) func(x, y int64) bool {
	vs := make([][2]int64, len(unit))
	for i, v := range unit {
		vs[i] = [2]int64{cx + r*v[0]/1000, cy + r*v[1]/1000}
	}
	return func(px, py int64) bool {
		in := false
		j := len(vs) - 1
		for i := range vs {
			xi, yi, xj, yj := vs[i][0], vs[i][1], vs[j][0], vs[j][1]
			if (yi > py) != (yj > py) {
				// px is left of the edge's crossing with the row py:
				// px < xi + (py-yi)(xj-xi)/(yj-yi), multiplied out.
				lhs, rhs := (px-xi)*(yj-yi), (py-yi)*(xj-xi)
				if (yj > yi && lhs < rhs) || (yj < yi && lhs > rhs) {
					in = !in
				}
			}
			j = i
		}
		return in
	}
}

func index(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	panic("demo: unknown class " + s)
}

func clamp255(v int) int { return max(0, min(255, v)) }

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// rgbaOf returns img as *image.RGBA, converting when it is another kind.
func rgbaOf(img image.Image) *image.RGBA {
	if m, ok := img.(*image.RGBA); ok {
		return m
	}
	b := img.Bounds()
	m := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			m.Set(x-b.Min.X, y-b.Min.Y, color.RGBAModel.Convert(img.At(x, y)))
		}
	}
	return m
}
