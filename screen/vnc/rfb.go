package vnc

import (
	"bufio"
	"crypto/des"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// This file is the RFB handshake (RFC 6143 section 7.1 and 7.3) and the
// client-to-server messages (section 7.5). Every multi-byte integer on the
// wire is big-endian.

// Encoding is an RFB encoding type: how the server sends a rectangle of
// pixels. Config.Encodings lists the ones a Display asks for.
type Encoding int32

// The encodings a Display decodes.
const (
	Raw      Encoding = 0  // plain pixels: cheapest to decode, most bytes
	CopyRect Encoding = 1  // a copy of another part of the screen
	ZRLE     Encoding = 16 // zlib-compressed tiles with palettes and runs
)

// Pseudo-encodings: a client lists them to declare what it copes with.
const (
	encDesktopSize Encoding = -223 // the framebuffer may change size
	encCursor      Encoding = -239 // the client draws the cursor itself, so it is not in the pixels
	encLEDState    Encoding = -261 // the server tells the state of the lock keys' LEDs
	encFence       Encoding = -312 // the client and server answer Fence messages
)

func (e Encoding) String() string {
	switch e {
	case Raw:
		return "Raw"
	case CopyRect:
		return "CopyRect"
	case ZRLE:
		return "ZRLE"
	case encDesktopSize:
		return "DesktopSize"
	case encCursor:
		return "Cursor"
	case encLEDState:
		return "LEDState"
	case encFence:
		return "Fence"
	}
	return fmt.Sprintf("encoding(%d)", int32(e))
}

// Security types (RFC 6143 section 7.2).
const (
	secInvalid = 0
	secNone    = 1
	secVNCAuth = 2
)

var securityNames = map[byte]string{
	secNone: "None", secVNCAuth: "VNC authentication", 5: "RA2", 6: "RA2ne", 16: "Tight",
	17: "Ultra", 18: "TLS", 19: "VeNCrypt", 20: "SASL", 21: "MD5", 22: "xvp", 30: "Apple",
}

func securityName(t byte) string {
	if n, ok := securityNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", t)
}

// Client-to-server message types.
const (
	msgSetPixelFormat           = 0
	msgSetEncodings             = 2
	msgFramebufferUpdateRequest = 3
	msgKeyEvent                 = 4
	msgPointerEvent             = 5
	msgClientFence              = 248
)

// Fence flags (the Fence extension of the RFB community specification,
// which TigerVNC implements): a fence with fenceRequest set asks the peer
// to answer with the same payload; fenceBlockBefore asks it to handle
// every message sent before the fence first.
const (
	fenceBlockBefore = 1 << 0
	fenceBlockAfter  = 1 << 1
	fenceSyncNext    = 1 << 2
	fenceRequest     = 1 << 31
)

// maxFencePayload is the longest payload a Fence message may carry.
const maxFencePayload = 64

// LED state bits of the LEDState pseudo-encoding.
const (
	ledScrollLock = 1 << 0
	ledNumLock    = 1 << 1
	ledCapsLock   = 1 << 2
)

// Limits on what a server may send, so that a hostile or broken server gets
// an error instead of a giant allocation.
const (
	maxSide   = 8192    // framebuffer width or height
	maxPixels = 1 << 25 // framebuffer area: 32 Mpx, 128 MiB per RGBA copy
	maxString = 1 << 16 // desktop name, failure reason
)

// pixelFormat is RFC 6143's PIXEL_FORMAT.
type pixelFormat struct {
	BPP, Depth           uint8
	BigEndian, TrueColor bool
	RedMax, GreenMax     uint16
	BlueMax              uint16
	RedShift             uint8
	GreenShift           uint8
	BlueShift            uint8
}

// clientFormat is the pixel format a Display asks for: 32 bits per pixel,
// little-endian, red in the lowest byte. A pixel on the wire is then the
// bytes R, G, B, x, which is image.RGBA's layout once x is set to 0xff,
// and a ZRLE CPIXEL is the three bytes R, G, B.
var clientFormat = pixelFormat{
	BPP: 32, Depth: 24, TrueColor: true,
	RedMax: 255, GreenMax: 255, BlueMax: 255,
	RedShift: 0, GreenShift: 8, BlueShift: 16,
}

func (f pixelFormat) append(b []byte) []byte {
	b = append(b, f.BPP, f.Depth, boolByte(f.BigEndian), boolByte(f.TrueColor))
	b = binary.BigEndian.AppendUint16(b, f.RedMax)
	b = binary.BigEndian.AppendUint16(b, f.GreenMax)
	b = binary.BigEndian.AppendUint16(b, f.BlueMax)
	return append(b, f.RedShift, f.GreenShift, f.BlueShift, 0, 0, 0)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// serverInit is what the handshake learns about the desktop.
type serverInit struct {
	W, H    int
	Name    string
	Version int // minor protocol version agreed: 3, 7 or 8
}

// handshake runs the RFB handshake on a fresh connection, from the
// server's ProtocolVersion to its ServerInit. A refused password or a
// server that wants a kind of security this client does not speak gives an
// error wrapping ErrAuth.
func handshake(r *bufio.Reader, w io.Writer, password string, shared bool) (serverInit, error) {
	var si serverInit
	var v [12]byte
	if _, err := io.ReadFull(r, v[:]); err != nil {
		return si, fmt.Errorf("read protocol version: %w", err)
	}
	minor, err := parseVersion(v[:])
	if err != nil {
		return si, err
	}
	si.Version = minor
	if _, err := fmt.Fprintf(w, "RFB 003.%03d\n", minor); err != nil {
		return si, fmt.Errorf("send protocol version: %w", err)
	}
	sec, err := negotiateSecurity(r, w, minor, password)
	if err != nil {
		return si, err
	}
	if sec == secVNCAuth {
		if err := vncAuth(r, w, password); err != nil {
			return si, err
		}
	}
	if minor >= 8 || sec != secNone { // 3.3 and 3.7 send no result for None
		if err := securityResult(r, minor); err != nil {
			return si, err
		}
	}
	if _, err := w.Write([]byte{boolByte(shared)}); err != nil {
		return si, fmt.Errorf("send client init: %w", err)
	}
	var b [24]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return si, fmt.Errorf("read server init: %w", err)
	}
	si.W, si.H = int(binary.BigEndian.Uint16(b[0:])), int(binary.BigEndian.Uint16(b[2:]))
	if err := checkSize(si.W, si.H); err != nil {
		return si, fmt.Errorf("server init: %w", err)
	}
	// b[4:20] is the server's pixel format; the client sets its own.
	name, err := readString(r, binary.BigEndian.Uint32(b[20:]))
	if err != nil {
		return si, fmt.Errorf("read desktop name: %w", err)
	}
	si.Name = name
	return si, nil
}

// parseVersion reads "RFB xxx.yyy\n" and returns the minor version this
// client will speak: 8 for 3.8 and later (Apple's 3.889 too), 7 for 3.7,
// 3 for anything older (3.5 is a misreported 3.3).
func parseVersion(v []byte) (int, error) {
	s := string(v)
	if len(s) != 12 || !strings.HasPrefix(s, "RFB ") || s[7] != '.' || s[11] != '\n' {
		return 0, fmt.Errorf("not an RFB server: it greeted with %q", s)
	}
	major, err1 := strconv.Atoi(s[4:7])
	minor, err2 := strconv.Atoi(s[8:11])
	if err1 != nil || err2 != nil || major != 3 {
		return 0, fmt.Errorf("unsupported RFB protocol version %q", strings.TrimSpace(s))
	}
	switch {
	case minor >= 8:
		return 8, nil
	case minor == 7:
		return 7, nil
	}
	return 3, nil
}

// negotiateSecurity agrees on a security type: VNC authentication if a
// password is given and the server offers it, else None.
func negotiateSecurity(r *bufio.Reader, w io.Writer, minor int, password string) (byte, error) {
	want := []byte{secNone}
	if password != "" {
		want = []byte{secVNCAuth, secNone}
	}
	if minor == 3 {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, fmt.Errorf("read security type: %w", err)
		}
		t := binary.BigEndian.Uint32(b[:])
		switch {
		case t == secInvalid:
			return 0, refused(r)
		case t == secNone || t == secVNCAuth && password != "":
			return byte(t), nil
		case t == secVNCAuth:
			return 0, fmt.Errorf("the server requires a password and none was given: %w", ErrAuth)
		}
		return 0, fmt.Errorf("the server wants security type %d, which this client does not speak: %w", t, ErrAuth)
	}
	n, err := r.ReadByte()
	if err != nil {
		return 0, fmt.Errorf("read security types: %w", err)
	}
	if n == 0 {
		return 0, refused(r)
	}
	offered := make([]byte, n)
	if _, err := io.ReadFull(r, offered); err != nil {
		return 0, fmt.Errorf("read security types: %w", err)
	}
	for _, t := range want {
		for _, o := range offered {
			if o == t {
				if _, err := w.Write([]byte{t}); err != nil {
					return 0, fmt.Errorf("send security type: %w", err)
				}
				return t, nil
			}
		}
	}
	names := make([]string, len(offered))
	for i, o := range offered {
		names[i] = securityName(o)
	}
	if password == "" && slices.Contains(offered, secVNCAuth) {
		return 0, fmt.Errorf("the server requires a password and none was given: %w", ErrAuth)
	}
	return 0, fmt.Errorf("the server offers security %s, none of which this client speaks (it speaks None and VNC authentication): %w",
		strings.Join(names, ", "), ErrAuth)
}

// refused reads the reason a server gives for refusing a connection.
func refused(r *bufio.Reader) error {
	reason, err := readReason(r)
	if err != nil {
		return fmt.Errorf("the server refused the connection and its reason could not be read: %w", err)
	}
	return fmt.Errorf("the server refused the connection: %s", reason)
}

// vncAuth answers the server's 16-byte challenge: it is DES-encrypted with
// the password (its first 8 bytes, zero-padded) as the key, each key byte
// with its bits reversed. That reversal is how every VNC implementation
// has always done it (RFC 6143 section 7.2.2 and its errata).
func vncAuth(r *bufio.Reader, w io.Writer, password string) error {
	var challenge [16]byte
	if _, err := io.ReadFull(r, challenge[:]); err != nil {
		return fmt.Errorf("read authentication challenge: %w", err)
	}
	resp, err := vncAuthResponse(challenge, password)
	if err != nil {
		return err
	}
	if _, err := w.Write(resp[:]); err != nil {
		return fmt.Errorf("send authentication response: %w", err)
	}
	return nil
}

// vncAuthResponse encrypts challenge with password as VNC authentication
// does.
func vncAuthResponse(challenge [16]byte, password string) ([16]byte, error) {
	var key [8]byte
	copy(key[:], password)
	for i, b := range key {
		key[i] = bits.Reverse8(b)
	}
	c, err := des.NewCipher(key[:])
	if err != nil {
		return [16]byte{}, fmt.Errorf("vnc authentication: %w", err)
	}
	var out [16]byte
	c.Encrypt(out[:8], challenge[:8])
	c.Encrypt(out[8:], challenge[8:])
	return out, nil
}

// securityResult reads SecurityResult; a failure wraps ErrAuth.
func securityResult(r *bufio.Reader, minor int) error {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// Servers before 3.8 close the connection on a failure.
			return fmt.Errorf("the server closed the connection after authentication: %w", ErrAuth)
		}
		return fmt.Errorf("read security result: %w", err)
	}
	if binary.BigEndian.Uint32(b[:]) == 0 {
		return nil
	}
	if minor >= 8 {
		if reason, err := readReason(r); err == nil && reason != "" {
			return fmt.Errorf("the server refused the credentials: %s: %w", reason, ErrAuth)
		}
	}
	return fmt.Errorf("the server refused the credentials: %w", ErrAuth)
}

// readReason reads a length-prefixed failure reason.
func readReason(r *bufio.Reader) (string, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	return readString(r, binary.BigEndian.Uint32(b[:]))
}

// readString reads n bytes of text, at most maxString of them.
func readString(r io.Reader, n uint32) (string, error) {
	if n > maxString {
		return "", fmt.Errorf("string of %d bytes is longer than %d", n, maxString)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// checkSize reports whether w x h is a framebuffer size the client accepts.
func checkSize(w, h int) error {
	if w <= 0 || h <= 0 || w > maxSide || h > maxSide || w*h > maxPixels {
		return fmt.Errorf("framebuffer size %dx%d: want 1..%d px each way and at most %d px", w, h, maxSide, maxPixels)
	}
	return nil
}

// Client messages, appended to b.

func appendSetPixelFormat(b []byte, f pixelFormat) []byte {
	return f.append(append(b, msgSetPixelFormat, 0, 0, 0))
}

func appendSetEncodings(b []byte, encs []Encoding) []byte {
	b = append(b, msgSetEncodings, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(encs)))
	for _, e := range encs {
		b = binary.BigEndian.AppendUint32(b, uint32(e))
	}
	return b
}

func appendUpdateRequest(b []byte, incremental bool, x, y, w, h int) []byte {
	b = append(b, msgFramebufferUpdateRequest, boolByte(incremental))
	for _, v := range [...]int{x, y, w, h} {
		b = binary.BigEndian.AppendUint16(b, uint16(v))
	}
	return b
}

func appendKeyEvent(b []byte, down bool, keysym uint32) []byte {
	b = append(b, msgKeyEvent, boolByte(down), 0, 0)
	return binary.BigEndian.AppendUint32(b, keysym)
}

func appendFence(b []byte, flags uint32, payload []byte) []byte {
	b = append(b, msgClientFence, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, flags)
	b = append(b, byte(len(payload)))
	return append(b, payload...)
}

func appendPointerEvent(b []byte, buttons uint8, x, y int) []byte {
	b = append(b, msgPointerEvent, buttons)
	b = binary.BigEndian.AppendUint16(b, uint16(x))
	return binary.BigEndian.AppendUint16(b, uint16(y))
}
