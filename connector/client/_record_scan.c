/*
 * The per-record steps of connector.client.columnar in C: one pass over the records
 * sections of RecordBatch v2 batches that finds every record's fields, and the gather of
 * key or value slices into Arrow's binary layout. Called through ctypes (which releases
 * the GIL for the call); see RecordScan in columnar.py for the Python side.
 *
 * Input is untrusted (bytes off the network): every read is bounded by the record's
 * own length, every record by its batch's section, every section by the buffer. A
 * malformed record returns a negative error code and the byte position where it was
 * found; nothing is read or written outside the buffers passed in.
 *
 * Layout of one record:
 *   length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
 *   keyLength varint | key | valueLength varint | value | headerCount varint | headers
 * (varints are zig-zag encoded, up to 10 bytes). Headers are left to the caller.
 *
 * The module init below only makes this a loadable extension module, so that it is
 * built and located like one; its functions are not Python callables.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Error codes (columnar.py names them). */
#define SCAN_BAD_VARINT (-1)       /* a varint longer than 10 bytes */
#define SCAN_PAST_RECORD (-2)      /* a field runs past the end of its record */
#define SCAN_BAD_LENGTH (-3)       /* a negative or impossible length or count */
#define SCAN_FIELDS_MISMATCH (-4)  /* the record's length does not match its fields */
#define SCAN_SECTION (-5)          /* records do not add up to their batch's size */
#define SCAN_COUNT (-6)            /* more records than the output has room for */
#define SCAN_OUT_OF_BOUNDS (-7)    /* a slice outside the buffer (gather) */

/* Columns of the scan output, each n int64 values, in this order. */
enum { C_TS_DELTA, C_OFFSET_DELTA, C_KEY_START, C_KEY_LEN, C_VALUE_START, C_VALUE_LEN,
       C_HEADER_POS, C_HEADER_COUNT, C_RECORD_END, N_COLUMNS };

/* The zig-zag varint at data[*pos], not reaching end; *pos moves past it. */
static int read_varint(const uint8_t *data, int64_t *pos, int64_t end, int64_t *out)
{
    uint64_t raw = 0;
    int shift = 0;
    int64_t p = *pos;
    while (p < end) {
        uint8_t b = data[p++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *pos = p;
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            return 0;
        }
        shift += 7;
        if (shift > 63)
            return SCAN_BAD_VARINT;
    }
    return SCAN_PAST_RECORD;
}

/* A length-prefixed field (key or value: length -1 is a null) at data[*pos] within the
 * record: its start and length; *pos moves past it. */
static int read_slice(const uint8_t *data, int64_t *pos, int64_t record_end, int64_t *start,
                      int64_t *len)
{
    int rc = read_varint(data, pos, record_end, len);
    if (rc)
        return rc;
    *start = *pos;
    if (*len < -1)
        return SCAN_BAD_LENGTH;
    if (*len > record_end - *pos)
        return SCAN_PAST_RECORD;
    if (*len > 0)
        *pos += *len;
    return 0;
}

#define TRY(call) do { int rc_ = (call); if (rc_) { *err_pos = pos; return rc_; } } while (0)

/*
 * Scan the records of `n_sections` sections: sections[3k], sections[3k + 1] are the
 * start and end of section k in data, sections[3k + 2] its record count. Writes the
 * fields of record i at out[c * capacity + i] for each column c. Returns the number of
 * records found (the sum of the counts), or an error code with *err_pos set.
 */
int64_t pyq_scan_records(const uint8_t *data, int64_t data_len, const int64_t *sections,
                         int64_t n_sections, int64_t *out, int64_t capacity, int64_t *err_pos)
{
    int64_t i = 0;
    for (int64_t k = 0; k < n_sections; k++) {
        int64_t pos = sections[3 * k], end = sections[3 * k + 1], count = sections[3 * k + 2];
        if (pos < 0 || end < pos || end > data_len || count < 0) {
            *err_pos = pos;
            return SCAN_SECTION;
        }
        for (int64_t r = 0; r < count; r++, i++) {
            int64_t length, ts_delta, offset_delta, key_start, key_len, value_start, value_len;
            int64_t header_count;
            if (i >= capacity) {
                *err_pos = pos;
                return SCAN_COUNT;
            }
            TRY(read_varint(data, &pos, end, &length));
            if (length < 6 || length > end - pos) {
                *err_pos = pos;
                return length < 6 ? SCAN_BAD_LENGTH : SCAN_SECTION;
            }
            int64_t record_end = pos + length;
            pos += 1; /* attributes */
            TRY(read_varint(data, &pos, record_end, &ts_delta));
            TRY(read_varint(data, &pos, record_end, &offset_delta));
            TRY(read_slice(data, &pos, record_end, &key_start, &key_len));
            TRY(read_slice(data, &pos, record_end, &value_start, &value_len));
            int64_t header_pos = pos;
            TRY(read_varint(data, &pos, record_end, &header_count));
            if (header_count < 0) {
                *err_pos = header_pos;
                return SCAN_BAD_LENGTH;
            }
            if (header_count == 0 && pos != record_end) {
                *err_pos = pos;
                return SCAN_FIELDS_MISMATCH;
            }
            out[C_TS_DELTA * capacity + i] = ts_delta;
            out[C_OFFSET_DELTA * capacity + i] = offset_delta;
            out[C_KEY_START * capacity + i] = key_start;
            out[C_KEY_LEN * capacity + i] = key_len;
            out[C_VALUE_START * capacity + i] = value_start;
            out[C_VALUE_LEN * capacity + i] = value_len;
            out[C_HEADER_POS * capacity + i] = header_pos;
            out[C_HEADER_COUNT * capacity + i] = header_count;
            out[C_RECORD_END * capacity + i] = record_end;
            pos = record_end;
        }
        if (pos != end) {
            *err_pos = pos;
            return SCAN_SECTION;
        }
    }
    return i;
}

/*
 * Copy the n slices data[starts[i] : starts[i] + lengths[i]] (length -1: a null, no
 * bytes) one after another into values (values_len bytes), writing Arrow's n + 1 int32
 * offsets. Returns the bytes written, or SCAN_OUT_OF_BOUNDS (*err_pos: the slice's index)
 * if a slice lies outside data or the slices do not fit values or int32 offsets.
 */
int64_t pyq_gather_slices(const uint8_t *data, int64_t data_len, const int64_t *starts,
                          const int64_t *lengths, int64_t n, int32_t *offsets,
                          uint8_t *values, int64_t values_len, int64_t *err_pos)
{
    int64_t o = 0;
    offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t start = starts[i], len = lengths[i] < 0 ? 0 : lengths[i];
        if (start < 0 || len > data_len - start || len > values_len - o || o + len > INT32_MAX) {
            *err_pos = i;
            return SCAN_OUT_OF_BOUNDS;
        }
        memcpy(values + o, data + start, (size_t)len);
        o += len;
        offsets[i + 1] = (int32_t)o;
    }
    return o;
}

static struct PyModuleDef record_scan_module = {
    PyModuleDef_HEAD_INIT, "_record_scan",
    "C record scanning for connector.client.columnar (loaded with ctypes).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__record_scan(void)
{
    return PyModule_Create(&record_scan_module);
}
