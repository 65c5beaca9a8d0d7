package screen

import (
	"regexp"
	"strings"
)

// SecretField reports whether text typed into t must never be shown: a
// password or one-time-code field, or a payment card field. Approval rules
// and the executor's record both ask it, so they agree.
func (t Target) SecretField() bool { return t.PasswordField() || t.PaymentField() }

// PasswordField reports whether t takes a password or a one-time code.
func (t Target) PasswordField() bool {
	ac := strings.ToLower(t.Autocomplete)
	return t.InputType == "password" || strings.Contains(ac, "current-password") ||
		strings.Contains(ac, "new-password") || strings.Contains(ac, "one-time-code")
}

var paymentName = regexp.MustCompile(`(?i)card.?(number|no\b|num)|credit.?card|debit.?card|\bcvv|\bcvc|\bcsc\b|security.?code|expir|\biban\b|kartennummer|kreditkarte|prüfziffer|numéro de carte|carte bancaire|cryptogramme|número de (la )?tarjeta|numero (della )?carta|número do cartão|kaartnummer|номер карты|カード番号|セキュリティコード|卡号|信用卡|安全码`)

// PaymentField reports whether t takes payment card data: an autocomplete
// cc-* field, or a name that says card number, CVC, expiry or IBAN.
func (t Target) PaymentField() bool {
	f := strings.Fields(t.Autocomplete)
	if len(f) > 0 && strings.HasPrefix(strings.ToLower(f[len(f)-1]), "cc-") {
		return true
	}
	return paymentName.MatchString(t.Name)
}

// LooksLikeCard reports whether text holds 13 to 19 digits (spaces and
// dashes allowed between them) that pass the Luhn check.
func LooksLikeCard(text string) bool {
	var digits []int
	flush := func() bool {
		ok := len(digits) >= 13 && len(digits) <= 19 && luhn(digits)
		digits = digits[:0]
		return ok
	}
	for _, r := range text {
		switch {
		case r >= '0' && r <= '9':
			digits = append(digits, int(r-'0'))
		case r == ' ' || r == '-':
		default:
			if flush() {
				return true
			}
		}
	}
	return flush()
}

func luhn(d []int) bool {
	sum := 0
	for i := range d {
		v := d[len(d)-1-i]
		if i%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}
