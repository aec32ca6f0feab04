// The metadata keys the engine (and the model list) reads, with the kind of value each must hold and, for the
// hyperparameters, the values a model may have. A model load checks the whole file against this table before
// reading anything else, so a key of the wrong type (naming the key, the type found and the type expected) or
// a value out of range (+Inf as the RMS epsilon, 0 layers) is refused up front, whatever code would read it.
// electron/models/gguf-metadata-rules.ts holds the same table and rule for the models page; the addon exports
// this one (readGguf's sibling ggufMetadataRules) and test/gguf-rules.test.ts checks that the two agree.
#pragma once
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"

namespace folio::gguf {

struct KeyRule {
  const char* key;  // "{arch}." stands for the value of general.architecture
  Kind kind;
  // For an integer or a number: the values accepted, min to max, min itself excluded when min_open. NaN and
  // the infinities are never accepted by a bounded rule; max = the largest double means "any finite value".
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;

  bool bounded() const;
  bool accepts(double v) const;
  // What the value must be: "an integer from 1 to 4096", "a finite number above 0 and at most 1".
  std::string range_text() const;
};

// The keys in a fixed order (general, {arch}, tokenizer).
const std::vector<KeyRule>& metadata_rules();

// The rule of a key as the table spells it ("{arch}.context_length"); the table has it (else it throws).
const KeyRule& metadata_rule(std::string_view table_key);

// "metadata key 'K' = V is out of range: it must be <range_text>", the message of every value out of range.
std::string out_of_range_message(std::string_view key, const Value& v, const KeyRule& r);

// Throws for the first key (in file order) that the table names and whose value does not match its kind
// (Error GGUF_TYPE) or lies outside its range (Error GGUF_VALUE). `arch` is the architecture whose "{arch}."
// keys apply; empty: none do (a file whose architecture the engine does not run is refused for that, not for
// keys it would never read).
void check_metadata(const File& file, std::string_view arch);

}  // namespace folio::gguf
