local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("PATCH", "/api/v1/configuration/", {
    ["Content-Type"] = "application/x-www-form-urlencoded",
    ["Authorization"] = "Bearer " .. os.getenv("TOK"),
  }, "THREADS=" .. (counter % 50 + 1))
end
