package api_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"mime/multipart"
	"strings"
	"testing"
)

// part is one part of a multipart body: a file when file is set.
type part struct{ name, value, file string }

func multipartBody(t *testing.T, parts ...part) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		var err error
		if p.file != "" {
			fw, e := w.CreateFormFile(p.name, p.file)
			if e == nil {
				_, e = fw.Write([]byte(p.value))
			}
			err = e
		} else {
			err = w.WriteField(p.name, p.value)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.Bytes()
}

// TestDocumentsVerifyTakesMultipart: POST /documents/verify accepts the
// form document APIs usually take (curl -F front_image=@page.jpg), with
// the JSON form's rules, and the contract says so.
func TestDocumentsVerifyTakesMultipart(t *testing.T) {
	e := startDocEnv(t)
	var img bytes.Buffer
	_ = png.Encode(&img, image.NewGray(image.Rect(0, 0, 400, 400)))
	raw := img.String()
	b64 := base64.StdEncoding.EncodeToString(img.Bytes())
	sbx := part{"secret", e.sandboxSecret, ""}
	tests := []struct {
		name     string
		bearer   string
		parts    []part
		status   int
		code     string
		decision string
	}{
		{"the image as a file", "", []part{sbx, {"country", "ZZV", ""}, {"document_type", "passport", ""}, {"front_image", raw, "page.png"}}, 200, "", "verify"},
		{"the image as base64 text", "", []part{sbx, {"country", "ZZR", ""}, {"document_type", "passport", ""}, {"front_image", b64, ""}, {"require_portrait", "false", ""}}, 200, "", "review"},
		{"a credential instead of the secret", e.credential, []part{{"country", "UTO", ""}, {"document_type", "passport", ""}, {"front_image", raw, "page.png"}}, 200, "", ""},
		{"no image", "", []part{sbx, {"country", "ZZV", ""}, {"document_type", "passport", ""}}, 400, "missing-image", ""},
		{"an unknown field", "", []part{sbx, {"country", "ZZV", ""}, {"document_type", "passport", ""}, {"front_image", raw, "p.png"}, {"colour", "red", ""}}, 400, "unknown-field", ""},
		{"an unknown file", "", []part{sbx, {"country", "ZZV", ""}, {"document_type", "passport", ""}, {"selfie", raw, "s.png"}}, 400, "unknown-field", ""},
		{"a field sent twice", "", []part{sbx, {"country", "ZZV", ""}, {"country", "ZZR", ""}, {"document_type", "passport", ""}, {"front_image", raw, "p.png"}}, 400, "bad-request", ""},
		{"the image twice, as file and text", "", []part{sbx, {"country", "ZZV", ""}, {"document_type", "passport", ""}, {"front_image", raw, "p.png"}, {"front_image", b64, ""}}, 400, "bad-request", ""},
		{"require_portrait not a boolean", "", []part{sbx, {"country", "ZZV", ""}, {"document_type", "passport", ""}, {"front_image", raw, "p.png"}, {"require_portrait", "maybe", ""}}, 400, "invalid-field", ""},
		{"not an image", e.credential, []part{{"country", "UTO", ""}, {"document_type", "passport", ""}, {"front_image", "hello world", "p.png"}}, 400, "unsupported-image-format", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := multipartBody(t, tc.parts...)
			r := e.Do("POST", "/v1/documents/verify", tc.bearer, body, "Content-Type", ct)
			if r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if tc.code != "" && r.ErrorCode(t) != tc.code {
				t.Fatalf("%s", r.Body)
			}
			if tc.decision != "" && !strings.Contains(string(r.Body), `"decision":"`+tc.decision+`"`) {
				t.Fatalf("%s", r.Body)
			}
		})
	}
	t.Run("a body that is not multipart as announced", func(t *testing.T) {
		r := e.Do("POST", "/v1/documents/verify", "", []byte("--nope\r\n"), "Content-Type", "multipart/form-data; boundary=other")
		if r.Status != 400 || r.ErrorCode(t) != "bad-request" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("the contract documents the form", func(t *testing.T) {
		doc := string(e.Do("GET", "/v1/openapi.json", "", nil).Body)
		i := strings.Index(doc, `"operationId":"documentsVerify"`)
		if i < 0 || !strings.Contains(doc, `"multipart/form-data":{"schema":{"$ref":"#/components/schemas/DocumentVerifyForm"}}`) ||
			!strings.Contains(doc, `"front_image":{"description":"The front's image file`) || !strings.Contains(doc, `"format":"binary"`) {
			t.Fatal("the contract does not document the multipart form of documentsVerify")
		}
	})
}
