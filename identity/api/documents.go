package api

import (
	"context"
	"encoding/base64"
	"errors"
	kernel "github.com/trustd/trustd/platform/http"
	"io"
	"strconv"
	"time"

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

func (x identityAPI) documentRoutes() []kernel.Route {
	errs := kernel.WithModuleCodes([]kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrBadRequest, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge,
		kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrUnavailable}, documents.Errors)
	return []kernel.Route{
		{Method: "POST", Path: "/documents/verify", ID: "documentsVerify", Tag: "Documents",
			Summary: "Screen identity-document images: capture quality, MRZ, barcode, portrait; a decision, never an authenticity claim.",
			Auth:    []kernel.Auth{kernel.AuthCredential, kernel.AuthSiteSecret}, Body: &DocumentVerifyInput{}, Multipart: &DocumentVerifyForm{}, Result: &documents.DocumentResult{},
			Errors: errs, MaxBody: DocumentsMaxBody, Handle: x.documentsVerify},
		{Method: "GET", Path: "/documents/supported", ID: "documentsSupported", Tag: "Documents",
			Summary: "Supported countries, document types, sides, checks and image limits.",
			Result:  &DocumentsSupported{}, Handle: x.documentsSupported},
	}
}

func (x identityAPI) documentsVerify(c *kernel.Call) {
	var in DocumentVerifyInput
	if c.IsMultipart() {
		if !decodeDocumentForm(c, &in) {
			return
		}
	} else if !c.Decode(&in) {
		return
	}
	_, _, sandbox, ok := c.AuthServer(in.Secret, "identity.document.verify", true)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := x.docs.Screen(ctx, documents.Request{Country: in.Country, DocumentType: in.DocumentType,
		Front: in.FrontImage, Back: in.BackImage, RequirePortrait: in.RequirePortrait, Sandbox: sandbox})
	if err != nil {
		if ctx.Err() != nil {
			c.Fail(kernel.ErrUnavailable, "document screening is busy; retry with backoff")
			return
		}
		if errors.Is(err, documents.ErrBusy) {
			c.Ctx.Response.Header.Set("Retry-After", "2")
		}
		c.FailErr(err)
		return
	}
	c.OK(res)
}

func (x identityAPI) documentsSupported(c *kernel.Call) {
	b := x.docs.Budget()
	c.OK(&DocumentsSupported{Documents: documents.Supported, Formats: documents.Formats,
		MaxImageBytes: documents.MaxImageBytes, MaxImageSide: documents.MaxImageSide, MaxImagePixels: documents.MaxImagePixels,
		MinImageSide: documents.MinImageSide, MaxBodyBytes: DocumentsMaxBody, OCRAvailable: documents.OCRInstalled(),
		DecodeBudgetBytes: b.Total, DecodeBudgetWaitMS: b.Wait.Milliseconds(), DecodeCost: documents.DecodeCostRule})
}

// decodeDocumentForm reads the multipart form of /documents/verify into
// in, with the JSON form's rules: every field at most once, no unknown
// field. An image comes as a file part (its bytes) or as a text part
// (base64, as in JSON); a file is base64-encoded here so both forms meet
// the same screening and its limits.
func decodeDocumentForm(c *kernel.Call, in *DocumentVerifyInput) bool {
	form, err := c.Ctx.MultipartForm()
	if err != nil {
		c.Fail(kernel.ErrBadRequest, "the multipart/form-data body could not be parsed: "+err.Error())
		return false
	}
	images := map[string]*string{"front_image": &in.FrontImage, "back_image": &in.BackImage}
	texts := map[string]*string{"secret": &in.Secret, "country": &in.Country, "document_type": &in.DocumentType,
		"front_image": &in.FrontImage, "back_image": &in.BackImage}
	seen := map[string]bool{}
	once := func(name string) bool {
		if seen[name] {
			c.Fail(kernel.ErrBadRequest, "the field "+name+" is sent twice")
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
					c.Fail(kernel.ErrInvalidField, "require_portrait: must be true or false")
					return false
				}
				in.RequirePortrait = b
			default:
				c.Fail(kernel.ErrUnknownField, "unknown field "+name)
				return false
			}
		}
	}
	for name, files := range form.File {
		dst, ok := images[name]
		if !ok {
			c.Fail(kernel.ErrUnknownField, "unknown file field "+name)
			return false
		}
		for _, fh := range files {
			if !once(name) {
				return false
			}
			if fh.Size > documents.MaxImageBytes {
				c.Fail(kernel.ErrInvalidField, name+": the image exceeds "+strconv.Itoa(documents.MaxImageBytes)+" bytes")
				return false
			}
			f, err := fh.Open()
			if err != nil {
				c.Fail(kernel.ErrBadRequest, name+": "+err.Error())
				return false
			}
			raw, err := io.ReadAll(io.LimitReader(f, documents.MaxImageBytes+1))
			f.Close()
			if err != nil {
				c.Fail(kernel.ErrBadRequest, name+": "+err.Error())
				return false
			}
			*dst = base64.StdEncoding.EncodeToString(raw)
		}
	}
	return true
}
