package demo

import (
	"image"
	"math"
)

// EmbeddingDim is the length of the vectors Embed returns.
const EmbeddingDim = hueBins + 3 + maskCells*maskCells + radialBins + 1

const (
	hueBins    = 12 // 30° each
	maskCells  = 8  // the shape's silhouette on an 8×8 grid
	radialBins = 16 // the outline's distance from the centre, by direction
)

// Block weights: how much colour, silhouette, outline and background count
// against each other. Colours differ more between classes than shapes do
// (a circle and a square differ only at the corners) and vary less within
// one (the jitter of a shade), so shape weighs more; the background only
// breaks ties. Chosen by measuring neighbour purity (see
// TestDemoNeighboursLookAlike): with these, 99% of an image's nearest
// neighbours have its label.
const (
	wHue    = 1.0
	wRGB    = 0.3
	wMask   = 2.5
	wRadial = 2.0
	wBack   = 0.05
)

// Embed computes an image's embedding from its pixels: an L2-normalised
// vector of EmbeddingDim floats made of
//
//   - a hue histogram and the mean colour of the foreground,
//   - the foreground's silhouette resampled to an 8×8 grid over its
//     bounding square (so position and size do not matter),
//   - the distance of the outline from the centroid in 16 directions,
//     relative to the largest (a scale-free description of the outline),
//   - the background's brightness.
//
// The foreground is what differs from the colour of the image's border, so
// the picture must have a plain border, as Generate's have. Embed is plain
// arithmetic, no model: images that look alike (same colour, same shape)
// get nearby vectors, whatever their size, place and background.
//
// Accumulations wrap each product in an explicit float64() conversion:
// the Go spec then forbids fusing x*y+z into one instruction, which arm64,
// ppc64le, s390x and riscv64 would otherwise do, so the vectors are the
// same bits on every machine.
func Embed(img image.Image) []float32 {
	m := rgbaOf(img)
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	out := make([]float32, EmbeddingDim)
	if w < 3 || h < 3 {
		return out
	}
	px := func(x, y int) (int, int, int) {
		o := m.PixOffset(b.Min.X+x, b.Min.Y+y)
		return int(m.Pix[o]), int(m.Pix[o+1]), int(m.Pix[o+2])
	}

	// The background: the border's mean colour.
	var bg [3]float64
	n := 0
	for y := range h {
		for x := range w {
			if x != 0 && y != 0 && x != w-1 && y != h-1 {
				continue
			}
			r, g, bl := px(x, y)
			bg[0], bg[1], bg[2] = bg[0]+float64(r), bg[1]+float64(g), bg[2]+float64(bl)
			n++
		}
	}
	for k := range bg {
		bg[k] /= float64(n)
	}

	// Foreground opacity from the distance to the background: pixels of a
	// gradient background stay under noise; anti-aliased edges get their
	// coverage.
	const noise = 36.0
	dist := make([]float64, w*h)
	dmax := 0.0
	for y := range h {
		for x := range w {
			r, g, bl := px(x, y)
			d := math.Abs(float64(r)-bg[0]) + math.Abs(float64(g)-bg[1]) + math.Abs(float64(bl)-bg[2])
			dist[y*w+x] = d
			dmax = max(dmax, d)
		}
	}
	feat := func(off int, block []float64, weight float64) {
		normalize(block)
		for i, v := range block {
			out[off+i] = float32(v * weight)
		}
	}
	back := (bg[0] + bg[1] + bg[2]) / (3 * 255)
	out[EmbeddingDim-1] = float32(back * wBack)
	if dmax < 2*noise {
		// No foreground: only the background describes the picture.
		normalize32(out)
		return out
	}
	alpha := make([]float64, w*h)
	minX, minY, maxX, maxY := w, h, -1, -1
	var sum, sx, sy float64
	hue := make([]float64, hueBins)
	var rgb [3]float64
	solid := 0.0
	for y := range h {
		for x := range w {
			a := max(0, min(1, (dist[y*w+x]-noise)/(dmax-noise)))
			alpha[y*w+x] = a
			if a == 0 {
				continue
			}
			sum += a
			sx += float64(a * float64(x)) // float64(): no fused multiply-add (see Embed)
			sy += float64(a * float64(y))
			if a < 0.5 {
				continue
			}
			minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
			if a < 0.9 {
				continue // edges blend with the background: not the shape's colour
			}
			r, g, bl := px(x, y)
			rgb[0], rgb[1], rgb[2] = rgb[0]+float64(r), rgb[1]+float64(g), rgb[2]+float64(bl)
			solid++
			hh, s := hueSat(r, g, bl)
			// Soft binning: a hue between two bin centres counts in both,
			// so a small change of hue is a small change of vector.
			f := hh / (360.0 / hueBins)
			lo := int(math.Floor(f - 0.5))
			t := f - 0.5 - float64(lo)
			hue[(lo+hueBins)%hueBins] += float64(s * (1 - t))
			hue[(lo+1+hueBins)%hueBins] += float64(s * t)
		}
	}
	feat(0, hue, wHue)
	if solid > 0 {
		for k := range rgb {
			out[hueBins+k] = float32(rgb[k] / solid / 255 * wRGB)
		}
	}

	if maxX >= 0 {
		// The silhouette over the bounding square, cell by cell.
		side := float64(max(maxX-minX, maxY-minY) + 1)
		x0 := float64(minX+maxX+1)/2 - side/2
		y0 := float64(minY+maxY+1)/2 - side/2
		mask := make([]float64, maskCells*maskCells)
		cnt := make([]float64, maskCells*maskCells)
		for y := range h {
			cy := int(math.Floor((float64(y) + 0.5 - y0) * maskCells / side))
			if cy < 0 || cy >= maskCells {
				continue
			}
			for x := range w {
				cx := int(math.Floor((float64(x) + 0.5 - x0) * maskCells / side))
				if cx < 0 || cx >= maskCells {
					continue
				}
				mask[cy*maskCells+cx] += alpha[y*w+x]
				cnt[cy*maskCells+cx]++
			}
		}
		for i := range mask {
			if cnt[i] > 0 {
				mask[i] /= cnt[i]
			}
		}
		feat(hueBins+3, mask, wMask)

		// The outline: the farthest solid pixel from the centroid in each
		// direction.
		mx, my := sx/sum, sy/sum
		radial := make([]float64, radialBins)
		for y := range h {
			for x := range w {
				if alpha[y*w+x] < 0.5 {
					continue
				}
				dx, dy := float64(x)-mx, float64(y)-my
				bin := int((math.Atan2(dy, dx) + math.Pi) / (2 * math.Pi) * radialBins)
				bin = min(bin, radialBins-1)
				radial[bin] = max(radial[bin], math.Hypot(dx, dy))
			}
		}
		top := 0.0
		for _, v := range radial {
			top = max(top, v)
		}
		if top > 0 {
			for i := range radial {
				radial[i] /= top
			}
		}
		feat(hueBins+3+maskCells*maskCells, radial, wRadial)
	}
	normalize32(out)
	return out
}

// hueSat returns the HSV hue (degrees) and saturation of a colour.
func hueSat(r, g, b int) (float64, float64) {
	hi, lo := max(r, g, b), min(r, g, b)
	if hi == 0 || hi == lo {
		return 0, 0
	}
	c := float64(hi - lo)
	var h float64
	switch hi {
	case r:
		h = 60 * float64(g-b) / c
	case g:
		h = 60 * (2 + float64(b-r)/c)
	default:
		h = 60 * (4 + float64(r-g)/c)
	}
	if h < 0 {
		h += 360
	}
	return h, c / float64(hi)
}

func normalize(v []float64) {
	s := 0.0
	for _, x := range v {
		s += float64(x * x)
	}
	if s == 0 {
		return
	}
	s = math.Sqrt(s)
	for i := range v {
		v[i] /= s
	}
}

func normalize32(v []float32) {
	s := 0.0
	for _, x := range v {
		s += float64(float64(x) * float64(x))
	}
	if s == 0 {
		return
	}
	s = math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) / s)
	}
}
