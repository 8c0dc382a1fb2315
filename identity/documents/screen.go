// Package documents screens identity-document images: decoding with limits,
// capture quality, MRZ reading and ICAO 9303 validation, AAMVA PDF417
// barcodes and portrait presence, folded into one decision. It never claims
// authenticity it did not check: authoritative_source is not_performed.
// See DESIGN.md.
package documents

import (
	"context"
	"encoding/base64"
	"errors"
	"image"
	"sort"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/lib/raster"
)

// Provider names the screening engine in results.
const Provider = "trustd-native-screening"

// Assurance boundary values (spec 2.9, observed).
const (
	BoundaryAuthenticity  = "native-screening-signals"
	BoundaryAuthoritative = "not-performed"
)

// Decisions.
const (
	Verify    = "verify"
	Recapture = "recapture"
	Review    = "review"
	Reject    = "reject"
)

// SupportedDocument is one supported document type: the same table drives the
// screening and GET /documents/supported.
type SupportedDocument struct {
	Type      string   `json:"document_type" required:"true"`
	Countries []string `json:"countries" required:"true" doc:"ISO 3166-1 alpha-3 codes, or [\"*\"] for any issuer (the MRZ issuer must then match the claimed country)."`
	Sides     []string `json:"sides" required:"true" doc:"Images needed: front, back."`
	MRZ       string   `json:"mrz" required:"true" enum:"TD1|TD2|TD3|none" doc:"MRZ format read."`
	MRZSide   string   `json:"mrz_side,omitempty" enum:"front|back"`
	Barcode   string   `json:"barcode" required:"true" enum:"pdf417_aamva|none"`
	Portrait  bool     `json:"portrait" required:"true" doc:"Portrait presence is checked when require_portrait is true."`
	codes     string   // MRZ document codes accepted (first letter)
}

// Supported is the capability table.
var Supported = []SupportedDocument{
	{Type: "passport", Countries: []string{"*"}, Sides: []string{"front"}, MRZ: TD3, MRZSide: "front", Barcode: "none", Portrait: true, codes: "P"},
	{Type: "id_card", Countries: []string{"*"}, Sides: []string{"front", "back"}, MRZ: TD1, MRZSide: "back", Barcode: "none", Portrait: true, codes: "IAC"},
	{Type: "residence_permit", Countries: []string{"*"}, Sides: []string{"front", "back"}, MRZ: TD1, MRZSide: "back", Barcode: "none", Portrait: true, codes: "IAR"},
	{Type: "travel_document_td2", Countries: []string{"*"}, Sides: []string{"front"}, MRZ: TD2, MRZSide: "front", Barcode: "none", Portrait: true, codes: "IACPV"},
	{Type: "driving_licence", Countries: []string{"USA", "CAN"}, Sides: []string{"front", "back"}, MRZ: "none", Barcode: "pdf417_aamva", Portrait: true},
}

func lookup(t string) *SupportedDocument {
	for i := range Supported {
		if Supported[i].Type == t {
			return &Supported[i]
		}
	}
	return nil
}

// Request is one screening request; images are base64 as received.
type Request struct {
	Country         string
	DocumentType    string
	Front, Back     string
	RequirePortrait bool
	Sandbox         bool // a sandbox credential: the simulator answers
}

// DocumentCheck is one check of 2.9 with the detail that explains its status.
type DocumentCheck struct {
	Status  string         `json:"status" required:"true"`
	Reasons []string       `json:"reasons,omitempty"`
	Detail  map[string]any `json:"detail,omitempty" doc:"Measured values and thresholds; never image bytes or full document numbers."`
}

// DocumentChecks are the four checks of 2.9.
type DocumentChecks struct {
	ImageQuality         DocumentCheck `json:"image_quality" required:"true" doc:"passed, failed."`
	MRZ                  DocumentCheck `json:"mrz" required:"true" doc:"valid, passed_with_corrections, invalid, expired, mismatch, unreadable, ocr_unavailable, not_applicable."`
	DocumentAuthenticity DocumentCheck `json:"document_authenticity" required:"true" doc:"screening_passed, screening_inconclusive, screening_failed: consistency signals only, never a claim of authenticity."`
	AuthoritativeSource  DocumentCheck `json:"authoritative_source" required:"true" doc:"Always not_performed: no issuer or government source is consulted."`
}

// DocumentRisk is the decision.
type DocumentRisk struct {
	Level       string   `json:"level" required:"true" enum:"low|medium|high"`
	Decision    string   `json:"decision" required:"true" enum:"verify|recapture|review|reject"`
	Reasons     []string `json:"reasons" required:"true" doc:"Stable reason codes behind the decision."`
	UserMessage string   `json:"user_message,omitempty" doc:"Safe to show the person (recapture guidance)."`
}

// AssuranceBoundary states what the screening can and cannot assert.
type AssuranceBoundary struct {
	DocumentAuthenticity string `json:"document_authenticity" required:"true" enum:"native-screening-signals"`
	AuthoritativeSource  string `json:"authoritative_source" required:"true" enum:"not-performed"`
}

// DocumentVerification is the verification object of 2.9.
type DocumentVerification struct {
	Provider          string            `json:"provider" required:"true"`
	Checks            DocumentChecks    `json:"checks" required:"true"`
	Risk              DocumentRisk      `json:"risk" required:"true"`
	AssuranceBoundary AssuranceBoundary `json:"assurance_boundary" required:"true"`
	Sandbox           bool              `json:"sandbox,omitempty" doc:"true when a sandbox credential selected a simulated outcome."`
}

// DocumentResult is the 2.9 document verification result.
type DocumentResult struct {
	Success      bool                 `json:"success" required:"true"`
	Verification DocumentVerification `json:"verification" required:"true"`
}

// Screener runs the checks. OCR nil means no OCR engine: MRZ documents go
// to review.
type Screener struct {
	OCR    OCR
	Now    func() time.Time
	sem    chan struct{}
	budget *budget
}

// NewScreener bounds concurrent screenings (decoding and OCR are CPU-heavy)
// to parallel, and the memory they hold to DefaultDecodeBudget
// (WithDecodeBudget changes it).
func NewScreener(ocr OCR, parallel int) *Screener {
	if parallel <= 0 {
		parallel = 2
	}
	return &Screener{OCR: ocr, Now: time.Now, sem: make(chan struct{}, parallel), budget: newBudget(DefaultDecodeBudget, DefaultBudgetWait)}
}

// WithDecodeBudget sets the bytes all screenings may hold at once and how
// long a screening waits for them before ErrBusy (0: it does not wait).
// Call it before the first screening.
func (s *Screener) WithDecodeBudget(bytes int64, wait time.Duration) *Screener {
	s.budget = newBudget(bytes, wait)
	return s
}

func validCountry(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

// decodeB64 decodes one image field, refusing oversize input before
// allocating for it.
func decodeB64(s string) ([]byte, error) {
	if i := strings.IndexByte(s, ','); i >= 0 && strings.HasPrefix(s, "data:") {
		s = s[i+1:]
	}
	if base64.StdEncoding.DecodedLen(len(s)) > MaxImageBytes+3 {
		return nil, ErrImageTooLarge.With("image exceeds %d bytes", MaxImageBytes)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b2, err2 := base64.RawStdEncoding.DecodeString(s); err2 == nil {
			return b2, nil
		}
		return nil, ErrImageEncoding
	}
	return b, nil
}

// Validate checks the request fields without touching the images.
func (r *Request) Validate() (*SupportedDocument, error) {
	if !validCountry(r.Country) {
		return nil, ErrCountry
	}
	dt := lookup(r.DocumentType)
	if dt == nil {
		return nil, ErrDocumentType.With("document_type %q is not supported; see GET /v1/documents/supported", r.DocumentType)
	}
	if dt.Countries[0] != "*" && !contains(dt.Countries, r.Country) {
		return nil, ErrDocumentType.With("%s is supported for %s only", dt.Type, strings.Join(dt.Countries, ", "))
	}
	if r.Front == "" {
		return nil, ErrImageMissing
	}
	if contains(dt.Sides, "back") && r.Back == "" && !r.Sandbox {
		return nil, ErrBackImageMissing.With("%s needs back_image", dt.Type)
	}
	return dt, nil
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

type side struct {
	page    *image.Gray // normalised
	q       Quality
	reg     Regions
	srcW    int
	decoded *image.Gray
}

// upload is one image's bytes and header, priced before decoding.
type upload struct {
	raw  []byte
	info raster.Info
}

func inspectB64(b64 string) (*upload, error) {
	raw, err := decodeB64(b64)
	if err != nil {
		return nil, err
	}
	in, err := inspect(raw)
	if err != nil {
		return nil, err
	}
	return &upload{raw: raw, info: in}, nil
}

func prepare(u *upload, portrait bool) (*side, error) {
	g, err := decodeInspected(u.raw, u.info)
	if err != nil {
		return nil, err
	}
	n := normalise(g)
	q, reg := Assess(n, g.Rect.Dx(), portrait)
	return &side{page: n, q: q, reg: reg, srcW: g.Rect.Dx(), decoded: g}, nil
}

// Screen runs every check and decides. Errors are request errors (400) or
// ctx errors; every doubt is a review, never a verify.
func (s *Screener) Screen(ctx context.Context, r Request) (*DocumentResult, error) {
	dt, err := r.Validate()
	if err != nil {
		return nil, err
	}
	if r.Sandbox {
		return Simulate(r.Country)
	}
	// Headers first: a refused image costs no decode and no wait.
	fu, err := inspectB64(r.Front)
	if err != nil {
		return nil, err
	}
	cost := DecodeCost(fu.info)
	var bu *upload
	if r.Back != "" {
		if bu, err = inspectB64(r.Back); err != nil {
			return nil, err
		}
		cost += DecodeCost(bu.info)
	}
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Then the memory: both sides' bytes at once, so two screenings never
	// each hold a front while waiting for a back.
	release, err := s.budget.acquire(ctx, cost)
	if err != nil {
		return nil, err
	}
	defer release()
	front, err := prepare(fu, r.RequirePortrait)
	if err != nil {
		return nil, err
	}
	var back *side
	if bu != nil {
		if back, err = prepare(bu, false); err != nil {
			return nil, err
		}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	e := &eval{dt: dt, req: r, now: now().UTC()}
	e.quality(front, back)
	if dt.MRZ != "none" {
		ms := front
		if dt.MRZSide == "back" && back != nil {
			ms = back
		}
		e.mrz(ctx, s.OCR, ms)
	} else {
		e.checks.MRZ = DocumentCheck{Status: "not_applicable"}
	}
	if dt.Barcode != "none" {
		e.barcode(back)
	}
	if r.RequirePortrait {
		e.portrait(front)
	}
	return e.result(), nil
}

// eval accumulates check outcomes and the reasons for each decision level.
type eval struct {
	dt                        *SupportedDocument
	req                       Request
	now                       time.Time
	checks                    DocumentChecks
	signals                   map[string]any
	reject, recapture, review []string
	mrzData                   *MRZ
}

func (e *eval) quality(front, back *side) {
	var reasons []string
	detail := map[string]any{"front": front.q}
	reasons = append(reasons, prefix("front_", front.q.Reasons)...)
	if back != nil {
		detail["back"] = back.q
		// the back of a licence carries a barcode, not an MRZ band: its
		// text band is not required; the MRZ side of an ID card is.
		br := back.q.Reasons
		if e.dt.MRZSide != "back" {
			br = without(br, "text_band_not_found", "glare_mrz")
		}
		reasons = append(reasons, prefix("back_", br)...)
	}
	if e.dt.MRZSide != "front" {
		reasons = without(reasons, "front_text_band_not_found", "front_glare_mrz")
	}
	if e.dt.MRZSide == "back" {
		// the front of an ID card has no MRZ, so its lowest text band is
		// informative only; blur still counts via the portrait region.
		reasons = without(reasons, "front_blur")
	}
	t := Thresholds
	detail["thresholds"] = map[string]any{"min_source_width": t.MinSourceWidth, "min_sharpness": t.MinSharpness,
		"max_glare_fraction": t.MaxGlareFraction, "mean_luma_range": []float64{t.MinMeanLuma, t.MaxMeanLuma}, "working_width": WorkingWidth}
	st := "passed"
	if len(reasons) > 0 {
		st = "failed"
		e.recapture = append(e.recapture, reasons...)
	}
	e.checks.ImageQuality = DocumentCheck{Status: st, Reasons: reasons, Detail: detail}
}

func prefix(p string, ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, p+s)
	}
	return out
}

func without(ss []string, drop ...string) []string {
	var out []string
	for _, s := range ss {
		if !contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

func (e *eval) mrz(ctx context.Context, ocr OCR, sd *side) {
	if ocr == nil {
		e.checks.MRZ = DocumentCheck{Status: "ocr_unavailable", Reasons: []string{"ocr_not_installed"}}
		e.review = append(e.review, "mrz_ocr_unavailable")
		return
	}
	text, err := ocr.Read(ctx, mrzCrop(sd.page, sd.reg.Band))
	if err != nil {
		reason := "ocr_failed"
		switch {
		case errors.Is(err, ErrOCRUnavailable):
			reason = "ocr_not_installed"
		case errors.Is(err, ErrOCRTimeout):
			reason = "ocr_timeout"
		}
		e.checks.MRZ = DocumentCheck{Status: "ocr_unavailable", Reasons: []string{reason}}
		e.review = append(e.review, "mrz_"+reason)
		return
	}
	lines := NormalizeOCRLines(text)
	m, perr := ParseMRZ(lines)
	corrections, repairs := 0, 0
	if fixed, n, rep := CorrectMRZ(lines); n+rep > 0 {
		if m2, err2 := ParseMRZ(fixed); err2 == nil && (m == nil || perr != nil || m2.Valid() || !m.Valid()) {
			m, perr, corrections, repairs = m2, nil, n, rep
		}
	}
	detail := map[string]any{}
	if perr != nil || m == nil {
		e.checks.MRZ = DocumentCheck{Status: "unreadable", Reasons: []string{"mrz_not_read"}, Detail: map[string]any{"lines_found": len(lines)}}
		if len(sd.q.Reasons) > 0 {
			e.recapture = append(e.recapture, "mrz_unreadable")
		} else {
			e.review = append(e.review, "mrz_unreadable")
		}
		return
	}
	detail["format"] = m.Format
	detail["issuer"] = m.Issuer
	detail["document_code"] = m.DocumentCode
	detail["expiry_date"] = m.ExpiryDate
	detail["corrections"] = corrections
	detail["structural_repairs"] = repairs
	if n := len(m.DocumentNumber); n >= 3 {
		detail["document_number_last3"] = m.DocumentNumber[n-3:]
	}
	var reasons []string
	status := "valid"
	switch {
	case !m.Valid():
		status = "invalid"
		reasons = append(reasons, prefix("check_digit_", m.FailedChecks())...)
		if len(sd.q.Reasons) > 0 {
			e.recapture = append(e.recapture, "mrz_check_digits_on_poor_capture")
		} else {
			e.review = append(e.review, "mrz_check_digits")
		}
	case m.Format != e.dt.MRZ || !strings.ContainsRune(e.dt.codes, rune(m.DocumentCode[0])):
		status = "mismatch"
		reasons = append(reasons, "document_type_mismatch")
		e.review = append(e.review, "mrz_document_type_mismatch")
	case m.Issuer != e.req.Country:
		status = "mismatch"
		reasons = append(reasons, "issuer_mismatch")
		e.review = append(e.review, "mrz_issuer_mismatch")
	case m.Expired(e.now):
		status = "expired"
		reasons = append(reasons, "document_expired")
		if corrections > 0 {
			e.review = append(e.review, "mrz_expired_after_corrections")
		} else {
			e.reject = append(e.reject, "document_expired")
		}
	case corrections > 0:
		status = "passed_with_corrections"
		reasons = append(reasons, "ocr_corrections_applied")
		e.review = append(e.review, "mrz_passed_with_corrections")
	}
	e.mrzData = m
	e.checks.MRZ = DocumentCheck{Status: status, Reasons: reasons, Detail: detail}
}

func (e *eval) signal(k string, v any) {
	if e.signals == nil {
		e.signals = map[string]any{}
	}
	e.signals[k] = v
}

func (e *eval) barcode(back *side) {
	if back == nil {
		e.recapture = append(e.recapture, "barcode_back_missing")
		e.signal("barcode", map[string]any{"status": "missing"})
		return
	}
	text, ok := ReadPDF417(back.decoded)
	if !ok {
		e.recapture = append(e.recapture, "barcode_not_found")
		e.signal("barcode", map[string]any{"status": "not_found"})
		return
	}
	a, ok := ParseAAMVA(text)
	if !ok {
		e.review = append(e.review, "barcode_not_aamva")
		e.signal("barcode", map[string]any{"status": "unparsed"})
		return
	}
	st := map[string]any{"status": "parsed", "format": "pdf417_aamva", "jurisdiction": a.Jurisdiction,
		"expiry_date": a.ExpiryDate.Format("2006-01-02")}
	var mism []string
	if a.Country != "" && a.Country != e.req.Country {
		mism = append(mism, "country")
	}
	if e.mrzData != nil && a.ExpiryDate.Format("060102") != e.mrzData.ExpiryDate {
		mism = append(mism, "expiry_date")
	}
	if len(mism) > 0 {
		st["status"] = "mismatch"
		st["mismatches"] = mism
		e.review = append(e.review, "barcode_mismatch")
	} else if e.now.After(a.ExpiryDate.AddDate(0, 0, 1)) {
		st["status"] = "expired"
		e.reject = append(e.reject, "document_expired")
	}
	if e.dt.MRZ == "none" {
		e.checks.MRZ.Detail = map[string]any{"barcode": st["status"]}
	}
	e.signal("barcode", st)
}

func (e *eval) portrait(front *side) {
	faces := DetectFaces(front.page, front.reg.Portrait.Union(image.Rect(0, 0, front.page.Rect.Dx()/2, front.reg.Band.Min.Y)))
	st := map[string]any{"faces": len(faces), "min_score": MinFaceScore}
	if len(faces) > 0 {
		st["best_score"] = faces[0].Score
	}
	switch {
	case len(faces) == 0 && contains(front.q.Reasons, "glare_portrait"):
		st["status"] = "obscured"
	case len(faces) == 0:
		st["status"] = "not_found"
		e.review = append(e.review, "portrait_not_found")
	default:
		st["status"] = "present"
	}
	e.signal("portrait", st)
}

var userMessages = map[string]string{
	"blur":                "The photo is blurry. Hold the document still, let the camera focus, and retake it.",
	"glare_mrz":           "Light is reflecting on the document's text. Tilt it away from the light and retake it.",
	"glare_portrait":      "Light is reflecting on the photo. Tilt the document away from the light and retake it.",
	"low_resolution":      "The document is too small in the photo. Move closer so it fills the frame.",
	"underexposed":        "The photo is too dark. Find better light and retake it.",
	"overexposed":         "The photo is too bright. Avoid direct light and retake it.",
	"text_band_not_found": "We could not find the text lines at the bottom of the document. Capture the whole page, upright.",
	"barcode":             "We could not read the barcode on the back. Capture the whole back of the card, in focus.",
	"mrz":                 "We could not read the document's text lines. Capture the whole page, upright and in focus.",
}

func userMessage(reasons []string) string {
	for _, k := range []string{"glare_mrz", "glare_portrait", "blur", "low_resolution", "underexposed", "overexposed", "text_band_not_found"} {
		for _, r := range reasons {
			if strings.HasSuffix(r, k) {
				return userMessages[k]
			}
		}
	}
	for _, r := range reasons {
		if strings.HasPrefix(r, "barcode") {
			return userMessages["barcode"]
		}
	}
	return userMessages["mrz"]
}

// result folds the reasons into the decision: reject beats review beats
// recapture beats verify, except that a quality problem with no hard
// failure asks for a recapture first (a better photo may resolve doubt).
func (e *eval) result() *DocumentResult {
	risk := DocumentRisk{Level: "low", Decision: Verify, Reasons: []string{}}
	switch {
	case len(e.reject) > 0:
		risk = DocumentRisk{Level: "high", Decision: Reject, Reasons: dedupe(e.reject)}
	case len(e.recapture) > 0:
		risk = DocumentRisk{Level: "medium", Decision: Recapture, Reasons: dedupe(append(e.recapture, e.review...)), UserMessage: userMessage(e.recapture)}
	case len(e.review) > 0:
		risk = DocumentRisk{Level: "medium", Decision: Review, Reasons: dedupe(e.review)}
	}
	auth := "screening_passed"
	switch risk.Decision {
	case Reject:
		auth = "screening_failed"
	case Review, Recapture:
		auth = "screening_inconclusive"
	}
	e.checks.DocumentAuthenticity = DocumentCheck{Status: auth, Detail: e.signals}
	e.checks.AuthoritativeSource = DocumentCheck{Status: "not_performed", Reasons: []string{"no_authoritative_connector"}}
	if e.checks.MRZ.Status == "" {
		e.checks.MRZ.Status = "not_applicable"
	}
	return &DocumentResult{Success: true, Verification: DocumentVerification{Provider: Provider, Checks: e.checks, Risk: risk,
		AssuranceBoundary: AssuranceBoundary{DocumentAuthenticity: BoundaryAuthenticity, AuthoritativeSource: BoundaryAuthoritative}}}
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Sandbox test inputs: with a sandbox credential the country selects the
// simulated outcome and no image is decoded.
var SandboxCountries = map[string]string{"ZZV": Verify, "ZZC": Recapture, "ZZR": Review, "ZZJ": Reject, "ZZU": "outage"}

var ErrSandboxScenario = ErrCountry.With("with a sandbox credential, country selects the outcome: ZZV verify, ZZC recapture, ZZR review, ZZJ reject, ZZU 503 outage")

// Simulate answers a sandbox scenario.
func Simulate(country string) (*DocumentResult, error) {
	d, ok := SandboxCountries[country]
	if !ok {
		return nil, ErrSandboxScenario
	}
	if d == "outage" {
		return nil, ErrSandboxOutage
	}
	e := &eval{dt: &Supported[0]}
	e.checks.ImageQuality = DocumentCheck{Status: "passed"}
	e.checks.MRZ = DocumentCheck{Status: "valid"}
	switch d {
	case Recapture:
		e.checks.ImageQuality = DocumentCheck{Status: "failed", Reasons: []string{"front_blur"}}
		e.recapture = []string{"front_blur"}
	case Review:
		e.checks.MRZ = DocumentCheck{Status: "passed_with_corrections", Reasons: []string{"ocr_corrections_applied"}}
		e.review = []string{"mrz_passed_with_corrections"}
	case Reject:
		e.checks.MRZ = DocumentCheck{Status: "expired", Reasons: []string{"document_expired"}}
		e.reject = []string{"document_expired"}
	}
	res := e.result()
	res.Verification.Sandbox = true
	return res, nil
}
