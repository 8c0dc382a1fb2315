// Package branding owns a workspace's branding profiles (spec 4.13): a
// name, colours and a logo that the widget, the hosted identity page and
// the journey pages show. Uploaded logos are decoded (raster only: PNG,
// JPEG, WebP), checked against size and pixel limits on the header before
// any pixel is decoded, and re-encoded to PNG at fixed sizes, so nothing of
// the uploaded file but its pixels survives (no metadata, no second
// format). It never sees HTTP and never serves an uploaded byte as is.
package branding
