#pragma once
// Small text helpers shared by the parsers and the command line: suffix tests, splitting, and
// "did you mean" suggestions for misspelt names.

#include <string>
#include <vector>

namespace rewire {

bool EndsWith(const std::string& s, const std::string& suffix);

/// The parts of `s` between separators; "" gives one empty part.
std::vector<std::string> Split(const std::string& s, char separator);

/// Levenshtein distance.
size_t EditDistance(const std::string& a, const std::string& b);

/// The candidate closest to `name` within edit distance 2, or "" when none is that close.
std::string Closest(const std::string& name, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" for a suggestion, "" for none.
std::string DidYouMean(const std::string& suggestion);

}  // namespace rewire
