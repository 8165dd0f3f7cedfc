local n = 0
setup = function(thread) n = n + 1; thread:set("tid", tostring(n) .. "-" .. tostring(os.time())) end
local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("POST", "/api/v1/sessions/", {
    ["Content-Type"] = "application/x-www-form-urlencoded",
    ["Authorization"] = "Bearer " .. os.getenv("TOK"),
  }, "name=s-" .. tid .. "-" .. counter)
end
