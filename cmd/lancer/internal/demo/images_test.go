package demo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"slices"
	"sort"
	"testing"
)

// The pixels and texts of the first images of two seeds. The generator
// must give these on every machine and in every run: a change here means a
// demo built elsewhere, or earlier, holds other images (then bump
// generatorVersion and this hash together).
const goldenImages = "06ba4a2b8b69dd7e6ea458eb2834fbcf2e91a796355f018004df2b7725a4ef43"

func TestDemoGenerateIsDeterministic(t *testing.T) {
	h := sha256.New()
	for _, seed := range []int64{0, 7} {
		for i := range 2 * Classes {
			it := Generate(seed, i)
			h.Write(it.Image.Pix)
			h.Write([]byte(it.Label + "|" + it.Caption + "|" + it.Background + "\n"))
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenImages {
		t.Errorf("images hash %s, want %s", got, goldenImages)
	}
	// Order and concurrency do not matter: image 5 alone is image 5.
	a, b := Generate(3, 5), Generate(3, 5)
	if !bytes.Equal(a.Image.Pix, b.Image.Pix) || a.Caption != b.Caption {
		t.Error("Generate(3, 5) differs between calls")
	}
	if c := Generate(4, 5); bytes.Equal(a.Image.Pix, c.Image.Pix) {
		t.Error("seeds 3 and 4 give the same image 5")
	}
}

func TestDemoClassesAreBalanced(t *testing.T) {
	for block := range 3 {
		seen := map[string]int{}
		for i := block * Classes; i < (block+1)*Classes; i++ {
			c, s := ClassOf(11, i)
			it := Generate(11, i)
			if it.Colour != c || it.Shape != s || it.Label != c+" "+s {
				t.Fatalf("image %d: ClassOf says %s %s, Generate %s/%s/%q", i, c, s, it.Colour, it.Shape, it.Label)
			}
			seen[it.Label]++
		}
		if len(seen) != Classes {
			t.Errorf("block %d has %d classes, want each of %d once: %v", block, len(seen), Classes, seen)
		}
	}
}

// TestShapesAreDrawn checks the drawing: the shape's pixels have its
// colour, the border the background's, and each shape covers the share of
// its bounding box its geometry says.
func TestDemoShapesAreDrawn(t *testing.T) {
	fill := map[string][2]float64{ // coverage of the bounding box, min and max
		"circle": {0.74, 0.83}, "square": {0.93, 1.01}, "diamond": {0.45, 0.56},
		"triangle": {0.45, 0.56}, "star": {0.33, 0.45}, "cross": {0.54, 0.66},
	}
	for i := range Classes {
		it := Generate(0, i)
		want := colourRGB[index(Colours[:], it.Colour)]
		minX, minY, maxX, maxY, solid := ImageSize, ImageSize, -1, -1, 0
		for y := range ImageSize {
			for x := range ImageSize {
				c := it.Image.RGBAAt(x, y)
				d := math.Abs(float64(c.R)-float64(want[0])) + math.Abs(float64(c.G)-float64(want[1])) + math.Abs(float64(c.B)-float64(want[2]))
				if d > 3*18 {
					continue
				}
				solid++
				minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
			}
		}
		if minX == 0 || minY == 0 || maxX == ImageSize-1 || maxY == ImageSize-1 {
			t.Errorf("image %d (%s): the shape touches the border", i, it.Label)
		}
		box := float64((maxX - minX + 1) * (maxY - minY + 1))
		if f := float64(solid) / box; f < fill[it.Shape][0] || f > fill[it.Shape][1] {
			t.Errorf("image %d (%s): covers %.2f of its bounding box, want %v", i, it.Label, f, fill[it.Shape])
		}
	}
}

func TestDemoEmbed(t *testing.T) {
	it := Generate(0, 1)
	v := Embed(it.Image)
	if len(v) != EmbeddingDim {
		t.Fatalf("%d dimensions, want %d", len(v), EmbeddingDim)
	}
	if n := norm(v); math.Abs(n-1) > 1e-5 {
		t.Errorf("norm %v, want 1", n)
	}
	// What is stored is the PNG: its decoding embeds the same.
	p, err := EncodePNG(it.Image)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := png.Decode(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	if w := Embed(dec); !slices.Equal(v, w) {
		t.Error("the decoded PNG embeds differently")
	}
	// Another kind of image, with an offset origin, embeds the same.
	nrgba := image.NewNRGBA(image.Rect(10, 20, 10+ImageSize, 20+ImageSize))
	draw.Draw(nrgba, nrgba.Bounds(), it.Image, image.Point{}, draw.Src)
	if w := Embed(nrgba); !slices.Equal(v, w) {
		t.Error("an NRGBA copy embeds differently")
	}
	// A blank picture has only a background.
	blank := image.NewRGBA(image.Rect(0, 0, 20, 20))
	draw.Draw(blank, blank.Bounds(), image.NewUniform(color.RGBA{200, 200, 200, 255}), image.Point{}, draw.Src)
	b := Embed(blank)
	if b[EmbeddingDim-1] != 1 || norm(b) != 1 {
		t.Errorf("a blank image embeds as %v", b)
	}
	if w := Embed(image.NewRGBA(image.Rect(0, 0, 1, 1))); norm(w) != 0 {
		t.Errorf("a 1×1 image embeds as %v", w)
	}
}

// TestDemoNeighboursLookAlike is what the demo's search by example relies on:
// the nearest neighbours of an image, by exact L2 distance, are images of
// its colour and shape, whatever their size, position and background.
func TestDemoNeighboursLookAlike(t *testing.T) {
	const n = 20 * Classes // 20 of each class
	items := make([]Item, n)
	vecs := make([][]float32, n)
	for i := range n {
		items[i] = Generate(0, i)
		vecs[i] = Embed(items[i].Image)
	}
	perClass := map[string][2]int{} // label → same, total
	same, total := 0, 0
	for q := range n {
		type hit struct {
			i int
			d float64
		}
		hits := make([]hit, 0, n-1)
		for j := range n {
			if j != q {
				hits = append(hits, hit{j, dist2(vecs[q], vecs[j])})
			}
		}
		sort.Slice(hits, func(a, b int) bool { return hits[a].d < hits[b].d })
		pc := perClass[items[q].Label]
		for _, h := range hits[:10] {
			if items[h.i].Label == items[q].Label {
				same++
				pc[0]++
			}
			total++
			pc[1]++
		}
		perClass[items[q].Label] = pc
	}
	if f := float64(same) / float64(total); f < 0.95 {
		t.Errorf("%.3f of the 10 nearest neighbours have the query's label, want ≥ 0.95", f)
	}
	for label, pc := range perClass {
		if f := float64(pc[0]) / float64(pc[1]); f < 0.8 {
			t.Errorf("%s: %.3f of the 10 nearest neighbours are %ss, want ≥ 0.8", label, f, label)
		}
	}
}

func dist2(a, b []float32) float64 {
	d := 0.0
	for k := range a {
		x := float64(a[k] - b[k])
		d += x * x
	}
	return d
}

func norm(v []float32) float64 {
	return math.Sqrt(dist2(v, make([]float32, len(v))))
}
