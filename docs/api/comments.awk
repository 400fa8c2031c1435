# Doxygen INPUT_FILTER for include/zkr/*.hpp (docs/api/Doxyfile): the headers
# are commented in plain `//`, which Doxygen skips, so this turns them into
# documentation on the way in, without changing the files, and keeps every
# line where it was (Doxygen's line numbers stay true):
#   - a comment block right above a declaration documents it (`///`); one
#     followed by a blank line is a section note and stays plain;
#   - the file's opening block documents the file (`@file` ends its first line);
#   - `code;  // text` documents that member (`///<`), with the comment
#     lines under it that start in the same column (not after a string
#     literal: its // could be inside it);
#   - lines indented further after a blank comment line (the usage
#     examples) become a code block; elsewhere what Doxygen would read as
#     markup (<tag>, \cmd, @cmd, #name, &, %, $) is escaped, outside `code`
#     and "quotes".
# Run as `awk -f comments.awk FILE` (Doxygen appends the file name).

function escape(text,    out, i, c, quote) {
  # Not inside `code` or "quotes", which Doxygen shows as they are.
  out = ""; quote = ""
  for (i = 1; i <= length(text); i++) {
    c = substr(text, i, 1)
    if (quote == "" && (c == "`" || c == "\"")) quote = c
    else if (c == quote) quote = ""
    else if (quote == "" && index("\\@<>#&%$", c)) c = "\\" c
    out = out c
  }
  return out
}

# Emits the buffered comment block: as documentation, or as it was.
function flush(as_doc, is_file,    i, text, in_code, prev_blank, body, indent) {
  in_code = 0
  prev_blank = 1
  for (i = 1; i <= nbuf; i++) {
    if (!as_doc) { print buf[i]; continue }
    match(buf[i], /^[ \t]*\/\//)
    indent = substr(buf[i], 1, RLENGTH - 2)
    body = substr(buf[i], RLENGTH + 1)
    sub(/^ /, "", body)
    if (body ~ /^  / && (prev_blank || in_code)) {
      in_code = 1               # Markdown: indented 4 after a blank line
      text = "    " body
    } else {
      if (body !~ /^[ \t]*$/) in_code = 0
      text = escape(body)
    }
    prev_blank = body ~ /^[ \t]*$/
    if (is_file && i == 1) text = text " @file"   # no word after it: this file
    print indent "/// " text
  }
  nbuf = 0
}

BEGIN { nbuf = 0; seen_code = 0; trail_col = 0 }

{
  line = $0
  # A plain comment line (not already ///, //!, or a URL in code).
  if (match(line, /^[ \t]*\/\/([ \t]|$)/)) {
    col = index(line, "//")
    if (trail_col && col == trail_col && nbuf == 0) {   # a trailing comment goes on
      rest = substr(line, col + 2); sub(/^ /, "", rest)
      print substr(line, 1, col - 1) "/// " escape(rest)
      next
    }
    trail_col = 0
    buf[++nbuf] = line
    next
  }
  blank = line ~ /^[ \t]*$/
  if (nbuf) {
    if (!seen_code) flush(1, 1)            # the file's opening block
    else flush(!blank && line !~ /^[ \t]*(#|}|public:|private:|protected:)/, 0)
  }
  trail_col = 0
  if (!blank && line !~ /^[ \t]*#/) seen_code = 1
  # code  // text  ->  code  ///< text, on declarations (not on } or #lines)
  if (line !~ /^[ \t]*(}|#)/ && match(line, /[ \t]\/\/ /) && substr(line, 1, RSTART) !~ /"/) {
    trail_col = RSTART + 1
    print substr(line, 1, RSTART) "///< " escape(substr(line, RSTART + 4))
    next
  }
  print line
}

END { if (nbuf) flush(0, 0) }
