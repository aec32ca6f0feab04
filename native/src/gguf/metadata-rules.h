// The metadata keys the engine (and the model list) reads, with the kind of value each must hold. A model
// load checks the whole file against this table before reading anything else, so a key of the wrong type is
// refused up front, naming the key, the type found and the type expected, whatever code would later read it.
// electron/models/gguf-metadata-rules.ts holds the same table and rule for the models page; the addon exports
// this one (readGguf's sibling ggufMetadataRules) and test/gguf-rules.test.ts checks that the two agree.
#pragma once
#include <string_view>
#include <vector>

#include "gguf/gguf.h"

namespace folio::gguf {

struct KeyRule {
  const char* key;  // "{arch}." stands for the value of general.architecture
  Kind kind;
};

// The keys in a fixed order (general, {arch}, tokenizer).
const std::vector<KeyRule>& metadata_rules();

// Throws Error GGUF_TYPE for the first key (in file order) that the table names and whose value does not
// match its kind. `arch` is the architecture whose "{arch}." keys apply; empty: none do (a file whose
// architecture the engine does not run is refused for that, not for keys it would never read).
void check_metadata_types(const File& file, std::string_view arch);

}  // namespace folio::gguf
