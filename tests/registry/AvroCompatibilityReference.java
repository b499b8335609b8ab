// Apache Avro's own verdict on reader/writer pairs, for tests/registry/test_compatibility_reference.py.
// Run as a single-file source program with Avro's jars on the class path:
//   java -cp '.cache/avro-VERSION/lib/*' tests/registry/AvroCompatibilityReference.java < pairs
// Input: two lines per pair (the reader schema's JSON, then the writer's, each on one line).
// Output: one line per pair, COMPATIBLE or INCOMPATIBLE (SchemaCompatibility's type), each
// pair parsed by fresh parsers so that named types of one pair do not leak into the next.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;

public class AvroCompatibilityReference {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String reader;
        while ((reader = in.readLine()) != null) {
            if (reader.isBlank()) {
                continue;
            }
            String writer = in.readLine();
            Schema r = new Schema.Parser().parse(reader);
            Schema w = new Schema.Parser().parse(writer);
            System.out.println(SchemaCompatibility.checkReaderWriterCompatibility(r, w).getType());
        }
    }
}
