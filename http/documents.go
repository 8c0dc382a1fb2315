package http

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/trustd/trustd/errcode"
	"github.com/trustd/trustd/identity/documents"
)

// Document screening (spec 4.6, 2.9): transport only. The checks, the
// decision and the sandbox simulator live in identity/documents.

// DocumentsMaxBody is the body limit of POST /documents/verify: two images
// of documents.MaxImageBytes, base64-encoded (4/3), plus the JSON fields.
const DocumentsMaxBody = 2*documents.MaxImageBytes*4/3 + 64<<10

// DocumentVerifyInput is the request of POST /documents/verify (spec 4.6).
type DocumentVerifyInput struct {
	Secret          string `json:"secret,omitempty" doc:"Legacy: the site's private secret. A sandbox site's secret selects a simulated outcome by country (ZZV verify, ZZC recapture, ZZR review, ZZJ reject, ZZU 503)."`
	Country         string `json:"country" required:"true" doc:"ISO 3166-1 alpha-3 issuer claimed, three upper-case letters."`
	DocumentType    string `json:"document_type" required:"true" enum:"passport|id_card|residence_permit|travel_document_td2|driving_licence"`
	FrontImage      string `json:"front_image" required:"true" doc:"Base64 JPEG, PNG or WebP (a data: URL prefix is accepted); at most 5 MiB decoded, 8000 px a side, 24 Mpx, short side ≥ 320 px; one frame; priced from its header against the node decode budget (GET /documents/supported), 16-bit PNG decoded at 8 bits. Never logged or stored."`
	BackImage       string `json:"back_image,omitempty" doc:"Base64 image of the back; required where GET /documents/supported lists the back side."`
	RequirePortrait bool   `json:"require_portrait,omitempty" doc:"Check a face is present in the portrait area."`
}

// DocumentVerifyForm is the multipart/form-data form of POST
// /documents/verify, as document APIs usually take uploads: the images as
// files (curl -F front_image=@page.jpg), the other fields as text parts.
type DocumentVerifyForm struct {
	Secret          string `json:"secret,omitempty" doc:"Legacy: the site's private secret (or Authorization: Bearer with a credential)."`
	Country         string `json:"country" required:"true" doc:"ISO 3166-1 alpha-3 issuer claimed, three upper-case letters."`
	DocumentType    string `json:"document_type" required:"true" enum:"passport|id_card|residence_permit|travel_document_td2|driving_licence"`
	FrontImage      string `json:"front_image" required:"true" format:"binary" doc:"The front's image file: JPEG, PNG or WebP, at most 5 MiB, the limits of GET /documents/supported. A text part with base64 is accepted too."`
	BackImage       string `json:"back_image,omitempty" format:"binary" doc:"The back's image file, where GET /documents/supported lists the back side."`
	RequirePortrait string `json:"require_portrait,omitempty" enum:"true|false" doc:"Check a face is present in the portrait area."`
}

// DocumentsSupported is the answer of GET /documents/supported.
type DocumentsSupported struct {
	Documents      []documents.SupportedDocument `json:"documents" required:"true"`
	Formats        []string                      `json:"formats" required:"true"`
	MaxImageBytes  int                           `json:"max_image_bytes" required:"true"`
	MaxImageSide   int                           `json:"max_image_side" required:"true"`
	MaxImagePixels int                           `json:"max_image_pixels" required:"true"`
	MinImageSide   int                           `json:"min_image_side" required:"true"`
	MaxBodyBytes   int                           `json:"max_body_bytes" required:"true"`
	OCRAvailable   bool                          `json:"ocr_available" required:"true" doc:"false: MRZ documents end in review until the OCR engine is installed."`
	// The decode budget (issue 24): what decoding may hold in memory.
	DecodeBudgetBytes  int64  `json:"decode_budget_bytes" required:"true" doc:"Bytes that all concurrent screenings on one node may hold decoded at once. A screening priced over the free budget waits up to decode_budget_wait_ms, then is refused 503 screening-busy with Retry-After; one priced over the whole budget is 400 image-too-large."`
	DecodeBudgetWaitMS int64  `json:"decode_budget_wait_ms" required:"true" doc:"How long a screening waits for decode budget before 503 screening-busy."`
	DecodeCost         string `json:"decode_cost" required:"true" doc:"How a screening is priced from the images' headers, before decoding: width × height × bytes per pixel by format, bit depth and channels, plus the grey copies."`
}

// withModuleCodes appends a module's codes to list, skipping codes already
// in it (the module's 503 is the shared service-unavailable).
func withModuleCodes(list []ErrorCode, mod []*errcode.Code) []ErrorCode {
	out := append([]ErrorCode(nil), list...)
	for _, m := range mod {
		if !slices.ContainsFunc(out, func(e ErrorCode) bool { return e.Code == m.Code }) {
			out = append(out, moduleCode(m))
		}
	}
	return out
}

func newDocumentScreener() *documents.Screener {
	return documents.NewScreener(documents.Tesseract{Timeout: 5 * time.Second}, 2)
}

func (s *Server) documentRoutes() []Route {
	errs := withModuleCodes([]ErrorCode{ErrMalformedJSON, ErrBadRequest, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
		ErrUnauthorized, ErrForbidden, ErrUnavailable}, documents.Errors)
	return []Route{
		{Method: "POST", Path: "/documents/verify", ID: "documentsVerify", Tag: "Documents",
			Summary: "Screen identity-document images: capture quality, MRZ, barcode, portrait; a decision, never an authenticity claim.",
			Auth:    []Auth{AuthCredential, AuthSiteSecret}, Body: &DocumentVerifyInput{}, Multipart: &DocumentVerifyForm{}, Result: &documents.DocumentResult{},
			Errors: errs, MaxBody: DocumentsMaxBody, Handle: s.documentsVerify},
		{Method: "GET", Path: "/documents/supported", ID: "documentsSupported", Tag: "Documents",
			Summary: "Supported countries, document types, sides, checks and image limits.",
			Result:  &DocumentsSupported{}, Handle: s.documentsSupported},
	}
}

func (s *Server) documentsVerify(c *Call) {
	var in DocumentVerifyInput
	if c.isMultipart() {
		if !c.decodeDocumentForm(&in) {
			return
		}
	} else if !c.decode(&in) {
		return
	}
	_, _, sandbox, ok := c.authServer(in.Secret, "identity.document.verify", true)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.mods.docs.Screen(ctx, documents.Request{Country: in.Country, DocumentType: in.DocumentType,
		Front: in.FrontImage, Back: in.BackImage, RequirePortrait: in.RequirePortrait, Sandbox: sandbox})
	if err != nil {
		if ctx.Err() != nil {
			c.fail(ErrUnavailable, "document screening is busy; retry with backoff")
			return
		}
		if errors.Is(err, documents.ErrBusy) {
			setRetryAfter(&c.Ctx.Response.Header, 2)
		}
		c.failErr(err)
		return
	}
	c.ok(res)
}

func (s *Server) documentsSupported(c *Call) {
	b := s.mods.docs.Budget()
	c.ok(&DocumentsSupported{Documents: documents.Supported, Formats: documents.Formats,
		MaxImageBytes: documents.MaxImageBytes, MaxImageSide: documents.MaxImageSide, MaxImagePixels: documents.MaxImagePixels,
		MinImageSide: documents.MinImageSide, MaxBodyBytes: DocumentsMaxBody, OCRAvailable: documents.OCRInstalled(),
		DecodeBudgetBytes: b.Total, DecodeBudgetWaitMS: b.Wait.Milliseconds(), DecodeCost: documents.DecodeCostRule})
}

// isMultipart reports a multipart/form-data body.
func (c *Call) isMultipart() bool {
	ct := c.Ctx.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.EqualFold(bytes.TrimSpace(ct), []byte("multipart/form-data"))
}

// decodeDocumentForm reads the multipart form of /documents/verify into
// in, with the JSON form's rules: every field at most once, no unknown
// field. An image comes as a file part (its bytes) or as a text part
// (base64, as in JSON); a file is base64-encoded here so both forms meet
// the same screening and its limits.
func (c *Call) decodeDocumentForm(in *DocumentVerifyInput) bool {
	form, err := c.Ctx.MultipartForm()
	if err != nil {
		c.fail(ErrBadRequest, "the multipart/form-data body could not be parsed: "+err.Error())
		return false
	}
	images := map[string]*string{"front_image": &in.FrontImage, "back_image": &in.BackImage}
	texts := map[string]*string{"secret": &in.Secret, "country": &in.Country, "document_type": &in.DocumentType,
		"front_image": &in.FrontImage, "back_image": &in.BackImage}
	seen := map[string]bool{}
	once := func(name string) bool {
		if seen[name] {
			c.fail(ErrBadRequest, "the field "+name+" is sent twice")
			return false
		}
		seen[name] = true
		return true
	}
	for name, vals := range form.Value {
		for _, v := range vals {
			if !once(name) {
				return false
			}
			switch dst, ok := texts[name]; {
			case ok:
				*dst = v
			case name == "require_portrait":
				b, err := strconv.ParseBool(v)
				if err != nil {
					c.fail(ErrInvalidField, "require_portrait: must be true or false")
					return false
				}
				in.RequirePortrait = b
			default:
				c.fail(ErrUnknownField, "unknown field "+name)
				return false
			}
		}
	}
	for name, files := range form.File {
		dst, ok := images[name]
		if !ok {
			c.fail(ErrUnknownField, "unknown file field "+name)
			return false
		}
		for _, fh := range files {
			if !once(name) {
				return false
			}
			if fh.Size > documents.MaxImageBytes {
				c.fail(ErrInvalidField, name+": the image exceeds "+strconv.Itoa(documents.MaxImageBytes)+" bytes")
				return false
			}
			f, err := fh.Open()
			if err != nil {
				c.fail(ErrBadRequest, name+": "+err.Error())
				return false
			}
			raw, err := io.ReadAll(io.LimitReader(f, documents.MaxImageBytes+1))
			f.Close()
			if err != nil {
				c.fail(ErrBadRequest, name+": "+err.Error())
				return false
			}
			*dst = base64.StdEncoding.EncodeToString(raw)
		}
	}
	return true
}
