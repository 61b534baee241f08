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
		return decodeError(body, err)
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

// decodeError turns an encoding/json error on body into an
// *apierr.Error.
//
// NB: DynamoDB answers a body that is not JSON with a SerializationException
// without a message; we keep the type and say where the syntax breaks. A
// member of the wrong JSON type gets DynamoDB's own wording (its Java
// deserializer's), see typeMismatch.
func decodeError(body []byte, err error) error {
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
		if msg := typeMismatch(body, te); msg != "" {
			return apierr.Wrap(apierr.Serialization, err, "%s", msg)
		}
		field := te.Field
		if field == "" {
			field = "(request)"
		}
		return apierr.Wrap(apierr.Serialization, err, "Unexpected value type for member %s: expected %s, got %s",
			apierr.Clip(field), jsonKind(te.Type), apierr.Clip(te.Value))
	}
	return apierr.Wrap(apierr.Serialization, err, "Could not parse the request body")
}

// typeMismatch words a member given the wrong JSON type as DynamoDB does
// ("NUMBER_VALUE cannot be converted to String", "Start of structure or
// map found where not expected", "Unexpected field type", "Unrecognized
// collection type ..."), or returns "" where DynamoDB's wording is not
// known (a number out of range for an integer member).
func typeMismatch(body []byte, te *json.UnmarshalTypeError) string {
	t := te.Type
	if t == nil {
		return ""
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	got := te.Value
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if got == "object" {
			return "Start of structure or map found where not expected"
		}
		return "Unexpected field type"
	case reflect.Map:
		if got == "array" {
			return "Unrecognized collection type java.util.Map<java.lang.String, " + javaClass(t.Elem()) + ">"
		}
		return "Unexpected field type"
	case reflect.Struct:
		if got == "array" {
			return "Unrecognized collection type class " + javaClass(t)
		}
		return "Unexpected field type"
	}
	java := javaScalar(t)
	if java == "" {
		return ""
	}
	switch {
	case got == "object":
		return "Start of structure or map found where not expected"
	case got == "array":
		return "Unrecognized collection type class java.lang." + java
	case got == "bool":
		if literalBefore(body, te.Offset) == "true" {
			return "TRUE_VALUE cannot be converted to " + java
		}
		return "FALSE_VALUE cannot be converted to " + java
	case got == "string":
		if java == "Boolean" {
			return "Unexpected token received from parser"
		}
		return "STRING_VALUE cannot be converted to " + java
	case got == "number" && java == "String" || got == "number" && java == "Boolean":
		if strings.ContainsAny(literalBefore(body, te.Offset), ".eE") {
			return "DECIMAL_VALUE cannot be converted to " + java
		}
		return "NUMBER_VALUE cannot be converted to " + java
	}
	return ""
}

// javaScalar names the Java type DynamoDB deserializes a member of Go type
// t into, or "" for none.
func javaScalar(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "String"
	case reflect.Bool:
		return "Boolean"
	case reflect.Int, reflect.Int32:
		return "Integer"
	case reflect.Int64:
		return "Long"
	case reflect.Float32, reflect.Float64:
		return "Double"
	}
	return ""
}

// javaClass names the DynamoDB model class of a structure type t (the
// wire and attr types carry the API's shape names).
func javaClass(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "java.lang.String"
	case reflect.Slice, reflect.Array:
		return "java.util.List"
	}
	name := t.Name()
	if strings.HasSuffix(t.PkgPath(), "/attr") {
		name = "AttributeValue"
	}
	return "com.amazonaws.dynamodb.v20120810." + name
}

// literalBefore returns the JSON literal (number, true, false) that ends
// at offset end of body, as encoding/json reports it.
func literalBefore(body []byte, end int64) string {
	if end < 0 || end > int64(len(body)) {
		return ""
	}
	i := int(end)
	for i > 0 && strings.IndexByte("0123456789+-.eEtruefals", body[i-1]) >= 0 {
		i--
	}
	return string(body[i:end])
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
