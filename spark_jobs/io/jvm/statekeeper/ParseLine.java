package statekeeper;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.IOException;
import java.util.regex.Pattern;

/**
 * The parse's first tier (spark_jobs/io/events.py): one landing line's bytes to the fields of
 * its event kind, and whether the line is "suspect".
 *
 * <p>Why not Spark's from_json: it builds a character reader over every line's bytes (an
 * InputStreamReader and its 8 KB buffer per line), about twice the cost of Spark's JSON file
 * reader, which hands Jackson the bytes as this does. And it coerces a number or an object
 * given for a string field to its text, which the parse then had to look for with a regex.
 * Here every field's JSON token is known: a value of the wrong JSON type makes the line suspect.
 *
 * <p>A suspect line goes to the parse's exact second tier (a VARIANT), which names its reason;
 * so this class only has to be sound, never to explain: bytes that are not UTF-8 (Spark's own
 * check), malformed JSON, a root that is not an object, anything after the object, a field of
 * the wrong JSON type, an integer outside 32 bits, or a timestamp not of the ISO shape make the
 * line suspect. The values of a line that is not suspect are what the event
 * holds. A key given twice keeps its last value, as Spark's readers do.
 *
 * <p>Arguments: the line's bytes (NULL: no parse, NULL result), the kind's fields as
 * "T:name,T:name,..." with T one of s (a string), t (a timestamp: a string of the ISO shape),
 * i (an integer, returned as a long), n (a number, returned as a double; the parse casts it to
 * its decimal), and the regular expression of the ISO shape (event_kinds.ISO_TS_WITH_ZONE,
 * applied as Spark's RLIKE applies it). The result is a row of the fields, in that order, then
 * the suspect flag, then whether anything but blanks follows the object ("{...}{...}": Spark's
 * parse_json reads the first value and ignores the rest, so the exact tier asks this).
 */
public final class ParseLine implements UDF3<byte[], String, String, Row> {
    private static final long serialVersionUID = 1L;

    // Strict JSON (no single quotes, comments, NaN...): the exact tier uses Spark's parse_json,
    // which is strict too. The size limits are lifted so that Jackson never fails a line that
    // parse_json reads: a line is at most 1 MB by then (longer ones are not parsed at all).
    private static final JsonFactory FACTORY = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxNestingDepth(Integer.MAX_VALUE)
                    .maxNumberLength(Integer.MAX_VALUE)
                    .maxStringLength(Integer.MAX_VALUE)
                    .maxNameLength(Integer.MAX_VALUE)
                    .build())
            .build();

    /** The fields of one kind, read from the arguments once per distinct text. */
    private static final class Kind {
        final String text;
        final String shapeText;
        final Pattern shape;
        final String[] names;
        final char[] types;

        Kind(String text, String shapeText) {
            String[] parts = text.split(",");
            this.text = text;
            this.shapeText = shapeText;
            this.shape = Pattern.compile(shapeText);
            this.names = new String[parts.length];
            this.types = new char[parts.length];
            for (int i = 0; i < parts.length; i++) {
                types[i] = parts[i].charAt(0);
                names[i] = parts[i].substring(2);
            }
        }

        int index(String name) {
            for (int i = 0; i < names.length; i++) {
                if (names[i].equals(name)) {
                    return i;
                }
            }
            return -1;
        }
    }

    private transient volatile Kind kind;

    private Kind kind(String text, String shapeText) {
        Kind k = kind;
        if (k == null || !k.text.equals(text) || !k.shapeText.equals(shapeText)) {
            k = new Kind(text, shapeText);
            kind = k;
        }
        return k;
    }

    @Override
    public Row call(byte[] line, String fields, String shape) {
        if (line == null) {
            return null;
        }
        Kind k = kind(fields, shape);
        int n = k.names.length;
        Object[] out = new Object[n + 2];
        boolean[] wrong = new boolean[n];
        boolean suspect;
        boolean after = false;
        if (!utf8(line)) {
            suspect = true; // Jackson does not check every byte (an overlong form, say)
        } else try (JsonParser p = FACTORY.createParser(line)) {
            boolean object = readObject(p, k, out, wrong);
            if (object) {
                try {
                    after = p.nextToken() != null;
                } catch (IOException e) { // "{...} trailing": not a JSON token
                    after = true;
                }
            }
            suspect = !object || after;
        } catch (IOException | RuntimeException e) { // malformed JSON
            suspect = true;
        }
        for (boolean w : wrong) {
            suspect |= w;
        }
        out[n] = suspect;
        out[n + 1] = after;
        return RowFactory.create(out);
    }

    /** Reads the root object into out; false when the root is not an object. */
    private static boolean readObject(JsonParser p, Kind k, Object[] out, boolean[] wrong)
            throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            return false;
        }
        JsonToken t;
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            int i = k.index(p.currentName());
            t = p.nextToken();
            if (i < 0) {
                p.skipChildren();
                continue;
            }
            out[i] = null;
            wrong[i] = false;
            if (t == JsonToken.VALUE_NULL) {
                continue;
            }
            switch (k.types[i]) {
                case 's':
                    if (t == JsonToken.VALUE_STRING) {
                        out[i] = p.getText();
                    } else {
                        wrong[i] = true;
                    }
                    break;
                case 't':
                    if (t == JsonToken.VALUE_STRING) {
                        String text = p.getText();
                        out[i] = text;
                        wrong[i] = !(isoShape(text) || k.shape.matcher(text).find());
                    } else {
                        wrong[i] = true;
                    }
                    break;
                case 'i':
                    if (t == JsonToken.VALUE_NUMBER_INT
                            && p.getNumberType() == JsonParser.NumberType.INT) {
                        out[i] = (long) p.getIntValue();
                    } else {
                        wrong[i] = true;
                    }
                    break;
                default:
                    if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) {
                        out[i] = p.getDoubleValue();
                    } else {
                        wrong[i] = true;
                    }
            }
            if (wrong[i]) {
                p.skipChildren();
            }
        }
        return t == JsonToken.END_OBJECT;
    }

    /** Valid UTF-8 as Spark's is_valid_utf8 says; a line of ASCII bytes is, without a look. */
    private static boolean utf8(byte[] line) {
        for (byte b : line) {
            if (b < 0) {
                return UTF8String.fromBytes(line).isValid();
            }
        }
        return true;
    }

    /**
     * The usual spellings, "2026-03-15T12:00:00Z", "...12:00:00.123Z", "...12:00:00+01:00", which
     * the ISO shape's expression accepts, checked without it: the expression then decides only
     * the rest. (Only a subset of its language is accepted here, so the answer is the same.)
     */
    static boolean isoShape(String s) {
        int n = s.length();
        if (n < 20 || !digits(s, 0, 4) || s.charAt(4) != '-' || !digits(s, 5, 7)
                || s.charAt(7) != '-' || !digits(s, 8, 10) || s.charAt(10) != 'T'
                || !digits(s, 11, 13) || s.charAt(13) != ':' || !digits(s, 14, 16)
                || s.charAt(16) != ':' || !digits(s, 17, 19)) {
            return false;
        }
        int i = 19;
        if (s.charAt(i) == '.') {
            int start = ++i;
            while (i < n && i - start < 9 && isDigit(s.charAt(i))) {
                i++;
            }
            if (i == start) {
                return false;
            }
        }
        if (i == n - 1) {
            return s.charAt(i) == 'Z';
        }
        return i == n - 6 && (s.charAt(i) == '+' || s.charAt(i) == '-') && digits(s, i + 1, i + 3)
                && s.charAt(i + 3) == ':' && digits(s, i + 4, i + 6);
    }

    private static boolean digits(String s, int from, int to) {
        for (int i = from; i < to; i++) {
            if (!isDigit(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }
}
