import http from "node:http";

http.createServer(async (req, res) => {
  const key = process.env.QUOTES_API_KEY;
  const upstream = await fetch("https://quotes.acme-widgets.com/today", { headers: { key } });
  const advice = await fetch("http://advisor:8500/ask"); // a service, by its name
  res.end((await upstream.text()) + (await advice.text()));
}).listen(8600);
