package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Decode parses the JSON body of a request into in, a new (zero) value of
// the operation's input type (*PutItemInput for PutItem, ...), which the
// caller takes from package dynamo's operations table.
//
// Decoding is strict about syntax and types and lenient about members it
// does not know, as DynamoDB is (newer SDKs send members older servers
// lack). Errors are *apierr.Error:
//
//   - Serialization if the body is not a JSON object, is not valid JSON,
//     has trailing data, or gives a member a value of the wrong JSON type
//     (the message names the member);
//   - Validation or Serialization as package attr reports them for
//     malformed attribute values (empty sets, bad numbers, two types in one
//     value, ...).
//
// After an error, in holds an unspecified partial decoding.
func Decode(body []byte, in any) error {
	if err := checkObject(body); err != nil {
		return err
	}
	if fastDecode(body, in) {
		return nil
	}
	return decodeJSON(body, in)
}

// decodeJSON decodes body into in with encoding/json, the reference that
// the fast decoders must agree with.
func decodeJSON(body []byte, in any) error {
	if err := json.Unmarshal(body, in); err != nil {
		return decodeError(err)
	}
	return nil
}

// checkObject rejects bodies whose first token does not open an object.
func checkObject(body []byte) error {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return nil
		}
		return errNotObject()
	}
	return errNotObject()
}

func errNotObject() error {
	return apierr.New(apierr.Serialization, "The request body must be a JSON object")
}

// decodeError turns an encoding/json error into an *apierr.Error.
func decodeError(err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return apierr.Wrap(apierr.Serialization, err, "Malformed JSON at offset %d: %s",
			se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "(request)"
		}
		return apierr.Wrap(apierr.Serialization, err, "Unexpected value type for member %s: expected %s, got %s",
			apierr.Clip(field), jsonKind(te.Type), apierr.Clip(te.Value))
	}
	return apierr.Wrap(apierr.Serialization, err, "Could not parse the request body")
}

// jsonKind names the JSON shape that Go type t is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer within range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	case reflect.Struct:
		return "a structure"
	}
	return "a value"
}
